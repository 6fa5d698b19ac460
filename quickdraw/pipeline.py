"""tf.data input pipelines for Quick, Draw! data in any published format.

``make_dataset(source, split="train", ...)`` gives a batched ``tf.data.Dataset`` of
``(images, labels)``: ``float32`` images ``(batch, size, size, C)`` in [0, 1] and
``int32`` labels (plus ``int64`` key_ids with ``with_key_id=True``). The stages are

    per-class files (TextLineDataset each, interleaved round-robin) --> batches of lines
      --> parse + validate + split by key_id (NumPy function, parallel map) --> unbatch
      --> shuffle --> batch --> render (OpenCV, parallel map) --> rebatch --> prefetch

or, for TFRecord shards made once by :func:`quickdraw.shards.write_shards` (each record a
block of drawings), ``TFRecordDataset`` (files interleaved by one thread) --> shuffle blocks
--> batch blocks --> parse them (``parse_example``) --> render --> rebatch to exactly
``batch_size`` drawings --> prefetch (no Python parsing at all; every per-record cost paid
once per block). The render map draws several batches a call
(``PipelineOptions.render_call_drawings``), which ``rebatch`` cuts into batches again, in the same order;
``.npy`` bitmaps come from a generator per file and are resized instead of rendered.
Line numbers in error reports count physical lines (Quick, Draw! CSVs have no line
breaks inside fields). A :class:`~quickdraw.formats.ReadReport` counts each pass
over the data (with ``repeat=True``, every epoch).

The train/validation split is by ``key_id`` (a hash of it), so a drawing is in exactly
one split whatever the file order, the shuffling or the number of workers.

Sharding for multi-worker training: the dataset's ``auto_shard_policy`` is ``FILE`` for
TFRecord shards (each worker reads its own files) and ``DATA`` otherwise (each worker
reads everything and keeps its 1/N). With ``distribute_datasets_from_function`` pass the
``tf.distribute.InputContext`` as ``input_context=`` and the dataset shards itself the
same way.

TensorFlow is imported inside the functions; everything here also runs on TF 2.12.
Used in notebooks 04, 05, 06 and the Horovod scripts of notebook 07.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from quickdraw.augment import augment_strokes
from quickdraw.counts import settings_key, split_counts
from quickdraw.formats import (
    CsvHeader,
    QuickDrawFormatError,
    ReadReport,
    detect_format,
    find_class_files,
    iter_file,
    npy_key_id,
    parse_csv_row,
    parse_ndjson_line,
    read_csv_header,
    read_kaggle_csv,
    read_npy_bitmaps,
)
from quickdraw.labels import LabelMap, google_name
from quickdraw.render import (
    POINT_BYTES,
    channels_of,
    render_batch,
    render_packed_batch,
    render_packed_blocks,
)

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

SPLITS = ("train", "val", "all")
_MASK64 = (1 << 64) - 1


# ------------------------------------------------------------------------------------
# The split
# ------------------------------------------------------------------------------------
def key_fraction(key_id: int, seed: int = 0) -> float:
    """A uniform number in [0, 1) fixed by ``key_id`` (splitmix64 hash; ``seed`` varies it)."""
    z = (int(key_id) + (seed + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return (z >> 11) / float(1 << 53)


def split_of(key_id: int, val_fraction: float = 0.1, seed: int = 0) -> str:
    """``"val"`` for about ``val_fraction`` of all key_ids, else ``"train"``. Never both."""
    return "val" if key_fraction(key_id, seed) < val_fraction else "train"


def _in_split(key_id: int, split: str, val_fraction: float, seed: int) -> bool:
    return split == "all" or split_of(key_id, val_fraction, seed) == split


# ------------------------------------------------------------------------------------
# Packing strokes into one string tensor
# ------------------------------------------------------------------------------------
def pack_strokes(strokes: Sequence[np.ndarray]) -> bytes:
    """Strokes -> bytes: float32 rows ``(x, y, t, stroke_index)`` (t = -1 when absent).

    The form in which drawings travel through tf.data (one string tensor each) and are
    stored in TFRecord shards; :func:`quickdraw.render.render_packed` draws it.
    """
    points = strokes[0] if len(strokes) == 1 else np.concatenate(strokes)
    a = np.empty((len(points), 4), np.float32)
    a[:, :2] = points[:, :2]
    a[:, 2] = points[:, 2] if points.shape[1] > 2 else -1.0
    a[:, 3] = np.repeat(np.arange(len(strokes), dtype=np.float32), [len(s) for s in strokes])
    return a.tobytes()


def unpack_strokes(data: bytes) -> list[np.ndarray]:
    """Inverse of :func:`pack_strokes` (times kept when they were present)."""
    a = np.frombuffer(data, np.float32).reshape(-1, 4)
    if len(a) == 0:
        return []
    cuts = np.flatnonzero(np.diff(a[:, 3])) + 1
    cols = 3 if a[0, 2] >= 0 else 2
    return [p[:, :cols] for p in np.split(a, cuts)]


def _block_drawings(blocks: Sequence[bytes], lengths: Sequence[int]) -> list[bytes]:
    """Shard blocks (:func:`_parse_blocks`) -> the packed strokes of each drawing."""
    data = b"".join(blocks)
    ends = np.cumsum(np.asarray(lengths, np.int64) * POINT_BYTES).tolist()
    return [data[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def _resize_bitmap_batch(raw: np.ndarray, size: int, nch: int) -> np.ndarray:
    import cv2

    out = np.empty((len(raw), size, size, nch), np.uint8)
    for i, data in enumerate(raw):
        img = np.frombuffer(data, np.uint8).reshape(28, 28)
        if size != 28:
            img = cv2.resize(
                img, (size, size), interpolation=cv2.INTER_AREA if size < 28 else cv2.INTER_LINEAR
            )
        out[i] = img[:, :, None]
    return out


# ------------------------------------------------------------------------------------
# Sources
# ------------------------------------------------------------------------------------
def resolve_source(
    source: str | Path | Sequence[str | Path], fmt: str | None
) -> tuple[str, list[Path], Path | None]:
    """(kind, files, root) with kind in csv_ndjson / npy / tfrecord / test_csv."""
    if isinstance(source, (str, Path)):
        root = Path(source)
        if root.is_file():
            kind = "tfrecord" if root.suffix == ".tfrecord" else detect_format(root)
            return ("csv_ndjson" if kind in ("kaggle_csv", "ndjson") else kind), [root], root.parent
        if not root.is_dir():
            raise FileNotFoundError(f"no Quick, Draw! data at {root}")
        if fmt in (None, "tfrecord") and any(root.glob("*.tfrecord")):
            return "tfrecord", sorted(root.glob("*.tfrecord")), root
        files = find_class_files(root, fmt)
        kind = detect_format(next(iter(files.values())))
        return ("npy" if kind == "npy" else "csv_ndjson"), list(files.values()), root
    files = [Path(p) for p in source]
    if not files:
        raise ValueError("empty list of files")
    kinds = {("tfrecord" if p.suffix == ".tfrecord" else detect_format(p)) for p in files}
    if len(kinds) != 1:
        raise ValueError(f"mixed file types {sorted(kinds)}")
    kind = kinds.pop()
    return ("csv_ndjson" if kind in ("kaggle_csv", "ndjson") else kind), files, None



def resolve_labels(
    source: str | Path | Sequence[str | Path], labels: LabelMap | None = None, fmt: str | None = None
) -> LabelMap:
    """The label map of a source: ``labels`` if given, else ``labels.json`` beside the
    data, else the sorted class-file names. Used in notebooks 04-06."""
    if labels is not None:
        return labels
    kind, files, root = resolve_source(source, fmt)
    if root is not None and (root / "labels.json").is_file():
        return LabelMap.load(root / "labels.json")
    if kind == "tfrecord":
        raise FileNotFoundError(f"TFRecord shards without labels.json in {root}; pass labels=")
    return LabelMap(sorted({google_name(p.stem) for p in files}))


def iter_examples(
    source: str | Path | Sequence[str | Path],
    *,
    split: str = "all",
    labels: LabelMap | None = None,
    val_fraction: float = 0.1,
    split_seed: int = 0,
    limit_per_class: int | None = None,
    recognized_only: bool = False,
    strict: bool = False,
    report: ReadReport | None = None,
    fmt: str | None = None,
) -> Iterator[tuple[list[np.ndarray], int, int]]:
    """Yield ``(strokes, label, key_id)`` in file order, without TensorFlow.

    The same filtering as :func:`make_dataset` (split, limits, bad rows); used by
    :func:`count_examples`, the TFRecord writer and for plain-Python looks at the data.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    kind, files, _ = resolve_source(source, fmt)
    if kind not in ("csv_ndjson",):
        raise ValueError(f"iter_examples reads .csv/.ndjson files, not {kind}")
    labels = _labels_for(source, labels, fmt, files)
    for path in files:
        for d in _iter_one(path, labels, strict, report, limit_per_class):
            if recognized_only and not d.recognized:
                continue
            if _in_split(d.key_id, split, val_fraction, split_seed):
                yield d.strokes, d.label, d.key_id


def _labels_for(source: Any, labels: LabelMap | None, fmt: str | None, files: list[Path]) -> LabelMap | None:
    if len(files) == 1 and files[0].name == "test_simplified.csv":
        return labels  # no classes in the test file
    return resolve_labels(source, labels, fmt)


def _iter_one(
    path: Path, labels: LabelMap | None, strict: bool, report: ReadReport | None, limit: int | None
):
    if path.name == "test_simplified.csv":
        return read_kaggle_csv(path, labels=None, strict=strict, report=report, limit=limit)
    return iter_file(path, labels=labels, strict=strict, report=report, limit=limit)


def count_examples(source: str | Path | Sequence[str | Path], **kwargs: Any) -> int:
    """How many examples :func:`make_dataset` yields per pass with the same arguments
    (split, val_fraction, limit_per_class, ...). For ``steps_per_epoch``.

    Class files are parsed once: the counts of every split go into a manifest beside the
    data (:mod:`quickdraw.counts`), which later calls, other processes and the other
    workers of a multi-worker job read instead of parsing again. ``strict=True`` or a
    ``report=`` reads the data (to raise on, or report, its bad rows). TFRecord shards:
    the counts in ``manifest.json`` of :func:`~quickdraw.shards.write_shards`.
    Used in notebook 06 and ``scripts/train_quickdraw.py``.
    """
    split = kwargs.get("split", "train")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    kind, files, root = resolve_source(source, kwargs.get("fmt"))
    val_fraction, split_seed = kwargs.get("val_fraction", 0.1), kwargs.get("split_seed", 0)
    if kind == "tfrecord":
        counts = _shard_counts(root, files)
        if counts is not None:
            return counts[split]
        import tensorflow as tf

        chosen = [str(f) for f in _tfrecord_files(files, split)]
        return sum(int(b[1].shape[0]) for b in _parse_blocks(tf.data.TFRecordDataset(chosen).batch(1024)))
    if kind == "npy":
        n = 0
        for p in files:
            arr = read_npy_bitmaps(p, strict=kwargs.get("strict", False), mmap=True)
            rows = range(min(len(arr), kwargs.get("limit_per_class") or len(arr)))
            word = google_name(p.stem)
            n += sum(_in_split(npy_key_id(word, r), split, val_fraction, split_seed) for r in rows)
        return n
    opts = {k: v for k, v in kwargs.items() if k in _ITER_KEYS}
    if opts.get("strict") or opts.get("report") is not None:
        return sum(1 for _ in iter_examples(source, **{**opts, "split": split}))
    labels = _labels_for(source, opts.get("labels"), kwargs.get("fmt"), files)
    limit, recognized_only = opts.get("limit_per_class"), opts.get("recognized_only", False)
    key = settings_key(val_fraction, split_seed, limit, recognized_only, labels.names if labels else None)

    def count_file(path: Path) -> dict[str, int]:
        c = {"train": 0, "val": 0, "all": 0}
        for d in _iter_one(path, labels, False, None, limit):
            if d.recognized or not recognized_only:
                c["all"] += 1
                c[split_of(d.key_id, val_fraction, split_seed)] += 1
        return c

    return split_counts(files, key, count_file, root)[split]


def _shard_counts(root: Path | None, files: list[Path]) -> dict[str, int] | None:
    """Counts per split from write_shards' manifest.json, if it describes these files."""
    if root is None:
        return None
    try:
        m = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        listed = {name for names in m["files"].values() for name in names}
        counts = {s: int(m["counts"][s]) for s in ("train", "val")}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if listed != {f.name for f in files}:
        return None
    return {**counts, "all": counts["train"] + counts["val"]}


_ITER_KEYS = {
    "split",
    "report",
    "labels",
    "val_fraction",
    "split_seed",
    "limit_per_class",
    "recognized_only",
    "strict",
    "fmt",
}


SHARD_FORMAT = 3  # blocks of drawings, a block's points in one string
_OLDER_SHARDS = {1: "one drawing per record", 2: "blocks with a string per drawing"}


def shard_block_size(files: Sequence[str | Path]) -> int:
    """The drawings per record of shards written by :func:`quickdraw.write_shards`, from the
    ``manifest.json`` beside them; raises ``ValueError`` with the way out when the manifest
    records another ``format`` than :data:`SHARD_FORMAT` (none recorded: format 1) or is
    missing. Used by :func:`make_dataset`."""
    folders = {Path(f).parent for f in files}
    if len(folders) != 1:
        raise ValueError(f"shards from {len(folders)} folders: read one folder of quickdraw.write_shards")
    path = folders.pop() / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: no manifest of quickdraw.write_shards ({e}); write them with it") from e
    fmt = manifest.get("format", 1)
    if fmt != SHARD_FORMAT:
        raise ValueError(
            f"{path.parent} holds shards of format {fmt} ({_OLDER_SHARDS.get(fmt, 'unknown')}); this version "
            f"reads format {SHARD_FORMAT}. Write them "
            "again: quickdraw.ensure_shards(source, out_dir, ...) rewrites shards of an older format "
            "(or delete the folder and call quickdraw.write_shards)"
        )
    return int(manifest["block_size"])


def _tfrecord_files(files: list[Path], split: str) -> list[Path]:
    if split == "all":
        return files
    chosen = [f for f in files if f.name.startswith(split + "-")]
    if not chosen:
        raise FileNotFoundError(f"no {split}-*.tfrecord shards among {[f.name for f in files][:4]}")
    return chosen


# ------------------------------------------------------------------------------------
# make_dataset: read -> render -> batch
# ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PipelineOptions:
    """The settings of :func:`make_dataset` beyond the everyday ones, passed to it as keywords
    (``make_dataset(path, limit_per_class=100, num_parallel_calls=1)``); the defaults suit
    training. How to choose the render threads: ``quickdraw/README.md``."""

    # which drawings
    limit_per_class: int | None = None  # at most this many drawings of each class file
    val_fraction: float = 0.1  # about this share of the key_ids is the "val" split
    split_seed: int = 0  # another seed, other key_ids in "val"
    recognized_only: bool = False  # only drawings the game recognised
    fmt: str | None = None  # which format of a folder holding several (find_class_files)
    strict: bool = False  # a bad row raises (when iterating), else it is skipped
    report: ReadReport | None = None  # counts the bad rows; read it after a full pass
    # how they are drawn and what a batch holds
    layout: str = "google"  # quickdraw.render's layout and line width
    line_width: float | None = None
    image_dtype: str = "float32"  # "uint8": pixels 0-255, to be scaled in the training step
    with_key_id: bool = False  # batches of (images, labels, key_ids)
    # order and speed
    seed: int | None = 42  # the shuffle's and the augmentation's
    shuffle_buffer: int = 4096  # drawings
    num_parallel_calls: int | None = None  # render threads (None: tf.data autotunes them)
    render_call_drawings: int = 2048  # at most this many drawings a render call, then rebatched
    cycle_length: int | None = None  # files read in turn (default: every class file, 4 shards)
    deterministic: bool = True  # the same batches in the same order for the same seed

    def __post_init__(self) -> None:
        if self.image_dtype not in ("float32", "uint8"):
            raise ValueError(f"image_dtype must be 'float32' or 'uint8', not {self.image_dtype!r}")


@dataclass(frozen=True)
class _Reading:
    """What the read stage needs: which rows, in which order, for which input pipeline."""

    source: Any
    split: str
    shuffle: bool
    labels: LabelMap | None
    opts: PipelineOptions
    pipelines: tuple[int, int] = (1, 0)  # (how many input pipelines, this one's id)


def make_dataset(
    source: str | Path | Sequence[str | Path],
    *,
    split: str = "train",
    batch_size: int = 64,
    image_size: int = 64,
    encoding: str = "plain",
    labels: LabelMap | None = None,
    shuffle: bool | None = None,
    repeat: bool = False,
    drop_remainder: bool = False,
    augment: bool | Mapping[str, float] = False,
    input_context: Any = None,
    **options: Any,
) -> tf.data.Dataset:
    """A batched ``tf.data.Dataset`` of ``(images, labels)`` from Quick, Draw! data.

    ``source``: a directory in Kaggle (``train_simplified/*.csv``) or Google
    (``simplified/``, ``raw/``, ``numpy_bitmap/`` or the files themselves) layout, a
    directory of TFRecord shards, one file (e.g. ``test_simplified.csv``: labels are -1),
    or a list of files. Images are ``float32`` in [0, 1], shape ``(image_size,
    image_size, C)`` with C from ``encoding`` (see :mod:`quickdraw.render`);
    labels are ``int32`` indices into ``labels`` (default :func:`resolve_labels`).

    ``split``: ``"train"``, ``"val"`` or ``"all"``. ``shuffle`` defaults to True for
    ``"train"``. ``repeat``: endless (pass ``steps_per_epoch`` to ``fit``).
    ``input_context``: a ``tf.distribute.InputContext``, to shard by hand (with
    ``distribute_datasets_from_function``). ``augment``: redraw every drawing under a fresh
    random hand each time it is read (:func:`quickdraw.augment_strokes`; True: its defaults,
    or a dict of its keyword arguments; needs strokes, not bitmaps). ``options``: the
    settings of :class:`PipelineOptions` (limit_per_class, with_key_id, image_dtype,
    num_parallel_calls, ...). Used in notebooks 04-08 and ``scripts/train_quickdraw.py``.

    The stages: read (:func:`_read`: files, shuffle, repeat, batches of drawings) → render
    (:func:`_render`: several batches a call) → batch (:func:`_batch`: rebatch, prefetch).
    """
    opts = PipelineOptions(**options)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    kind, files, _ = resolve_source(source, opts.fmt)
    pipelines = (1, 0)
    if input_context is not None:
        pipelines = (input_context.num_input_pipelines, input_context.input_pipeline_id)
    shuffle = split == "train" if shuffle is None else shuffle
    reading = _Reading(source, split, shuffle, labels, opts, pipelines)
    image_bytes = image_size * image_size * channels_of(encoding) * (4 if opts.image_dtype == "float32" else 1)
    per_call = batch_size if augment else drawings_per_call(batch_size, image_bytes, opts.render_call_drawings)
    rebatch = kind == "tfrecord" or per_call != batch_size  # shards come in whole blocks
    ds, policy = _read(kind, files, reading, per_call, repeat, drop_remainder and not rebatch)
    ds = _render(ds, kind, image_size, encoding, augment, opts)
    return _batch(ds, batch_size, rebatch, drop_remainder, policy, opts)


_RENDER_CALL_BYTES = 16 << 20  # one render call's images at most (CHANGELOG.md: issue 33)


def drawings_per_call(batch_size: int, image_bytes: int, most: int = PipelineOptions.render_call_drawings) -> int:
    """The drawings of one render call: a whole number of batches, at most ``most`` and
    16 MiB of images, at least one batch (every call of a ``tf.numpy_function`` costs a
    fixed amount: several batches a call, cut into batches again by ``rebatch``)."""
    cap = min(most, _RENDER_CALL_BYTES // max(1, image_bytes))
    return batch_size * max(1, cap // batch_size)


def _read(
    kind: str, files: list[Path], reading: _Reading, batch_size: int, repeat: bool, drop_remainder: bool
) -> tuple[tf.data.Dataset, Any]:
    """The read stage: batches of ``(packed strokes or bitmaps, labels, key_ids)`` of
    ``batch_size`` rows, and the auto-shard policy. Shards are shuffled and batched as blocks
    (the shuffle buffer in blocks) and parsed a batch of blocks at once: ``((points, lengths),
    labels, key_ids)`` of ``batch_size // block`` whole blocks (at least one)."""
    if kind == "tfrecord":
        files = _tfrecord_files(files, reading.split)
        block = shard_block_size(files)  # raises on shards of an older format
        ds, policy = _read_records(files, reading)
    else:
        block = 1  # one drawing per element
        ds, policy = (_read_bitmaps if kind == "npy" else _read_strokes)(files, reading)
    if reading.shuffle:
        buffer = max(1, reading.opts.shuffle_buffer // block)
        ds = ds.shuffle(buffer, seed=reading.opts.seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    if kind != "tfrecord":
        return ds.batch(batch_size, drop_remainder=drop_remainder), policy
    return _parse_blocks(ds.batch(max(1, batch_size // block))), policy


def _render(
    ds: tf.data.Dataset, kind: str, image_size: int, encoding: str, augment: bool | Mapping[str, float],
    opts: PipelineOptions,
) -> tf.data.Dataset:
    """The render stage: a parallel map of a NumPy function (:func:`_image_maker`) that draws
    each batch of the read stage into ``uint8`` images (then ``float32`` in [0, 1] unless
    ``opts.image_dtype`` is ``"uint8"``)."""
    import tensorflow as tf

    payload = {"npy": "bitmaps", "tfrecord": "blocks"}.get(kind, "strokes")
    to_images = _image_maker(payload, augment, image_size, encoding, opts)

    def render_map(data: tf.Tensor | tuple[tf.Tensor, tf.Tensor], label: tf.Tensor, key: tf.Tensor):
        inputs = list(data) if isinstance(data, tuple) else [data]  # blocks: (points, lengths)
        images = tf.numpy_function(to_images, inputs, tf.uint8, stateful=bool(augment))
        if opts.image_dtype == "float32":
            images = tf.cast(images, tf.float32) * (1.0 / 255.0)
        return tf.ensure_shape(images, [None, image_size, image_size, channels_of(encoding)]), label, key

    threads = opts.num_parallel_calls or tf.data.AUTOTUNE
    return ds.map(render_map, num_parallel_calls=threads, deterministic=opts.deterministic)


def _batch(
    ds: tf.data.Dataset, batch_size: int, rebatch: bool, drop_remainder: bool, policy: Any, opts: PipelineOptions
) -> tf.data.Dataset:
    """The batch stage: the rendered calls cut into batches of ``batch_size`` (the same drawings
    in the same order as batches drawn one by one), their shapes, prefetch, and the options."""
    import tensorflow as tf

    if rebatch:
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)

    def batch_shapes(img: tf.Tensor, label: tf.Tensor, key: tf.Tensor):
        img = tf.ensure_shape(img, [batch_size if drop_remainder else None, *img.shape[1:]])
        label, key = tf.ensure_shape(label, img.shape[:1]), tf.ensure_shape(key, img.shape[:1])
        return (img, label, key) if opts.with_key_id else (img, label)

    # a map after the rebatch: DATA auto-sharding takes a rebatch right before the prefetch for
    # tf.distribute's own and rewrites it to split every batch by the replicas (auto_shard.cc)
    ds = ds.map(batch_shapes).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy
    if opts.seed is not None and opts.deterministic:
        options.deterministic = True
    return ds.with_options(options)


def _read_records(files: list[Path], reading: _Reading) -> tuple[tf.data.Dataset, Any]:
    """TFRecord shards of a split: one dataset of serialized records (blocks of drawings,
    parsed after batching); each worker reads its own files (``FILE`` auto-sharding)."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices([str(f) for f in files])
    n_pipes, pipe_id = reading.pipelines
    if n_pipes > 1:
        if len(files) < n_pipes:
            raise ValueError(f"{len(files)} shard files cannot feed {n_pipes} input pipelines; write more shards")
        ds = ds.shard(n_pipes, pipe_id)
    if reading.shuffle:
        ds = ds.shuffle(len(files), seed=reading.opts.seed)
    # one thread reads the (local) files in turn, record by record: the order of a deterministic
    # parallel interleave at less CPU per record (CHANGELOG.md, issue 33)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), reading.opts.cycle_length or 4))
    return ds, tf.data.experimental.AutoShardPolicy.FILE


def _parse_blocks(ds: tf.data.Dataset) -> tf.data.Dataset:
    """Batches of serialized blocks → ``((points, lengths), labels, key_ids)``: the blocks'
    packed strokes (a string each), the points of each of their drawings, and the drawings'
    labels and key_ids in a row (``parse_example`` on the batch at once; a sequential map,
    run by the thread that asks for the next element: no hand-off between threads)."""
    import tensorflow as tf

    spec = {
        "points": tf.io.FixedLenFeature([], tf.string),
        "lengths": tf.io.RaggedFeature(tf.int64),
        "labels": tf.io.RaggedFeature(tf.int64),
        "key_ids": tf.io.RaggedFeature(tf.int64),
    }

    def parse(x: tf.Tensor) -> tuple[tuple[tf.Tensor, tf.Tensor], tf.Tensor, tf.Tensor]:
        e = tf.io.parse_example(x, spec)
        blocks = (e["points"], e["lengths"].flat_values)
        return blocks, tf.cast(e["labels"].flat_values, tf.int32), e["key_ids"].flat_values

    return ds.map(parse)


def _read_bitmaps(files: list[Path], reading: _Reading) -> tuple[tf.data.Dataset, Any]:
    """``.npy`` bitmaps: a generator per file, files interleaved; every worker reads all
    and keeps its 1/N (``DATA`` auto-sharding)."""
    import tensorflow as tf

    label_map = _labels_for(reading.source, reading.labels, reading.opts.fmt, files)
    gen = _npy_generator(label_map, reading.opts.val_fraction, reading.opts.split_seed, reading.split,
                         reading.opts.limit_per_class, reading.opts.strict, reading.opts.report)
    sig = (tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int64))
    ds = tf.data.Dataset.from_tensor_slices([str(f) for f in files])
    if reading.shuffle:
        ds = ds.shuffle(len(files), seed=reading.opts.seed)
    ds = ds.interleave(
        lambda p: tf.data.Dataset.from_generator(gen, args=(p,), output_signature=sig),
        cycle_length=min(len(files), reading.opts.cycle_length or len(files)),
        block_length=1,
    )
    return _shard_rows(ds.unbatch(), reading), tf.data.experimental.AutoShardPolicy.DATA


def _read_strokes(files: list[Path], reading: _Reading) -> tuple[tf.data.Dataset, Any]:
    """CSV or ndjson files, one per class: lines read round-robin (classes mixed from the first
    batch on), then parsed, validated and split in Python a few hundred rows per call; every
    worker reads all and keeps its 1/N (``DATA`` auto-sharding)."""
    import tensorflow as tf

    label_map = _labels_for(reading.source, reading.labels, reading.opts.fmt, files)
    specs = _file_specs(files, reading.opts.strict, reading.opts.report)
    if not specs:
        raise FileNotFoundError(f"no readable Quick, Draw! files in {reading.source}")
    parse = _row_parser(specs, label_map, reading.split, reading.opts.val_fraction, reading.opts.split_seed,
                        reading.opts.recognized_only, reading.opts.strict, reading.opts.report)
    paths = tf.constant([str(sp.path) for sp in specs])
    limit = reading.opts.limit_per_class
    takes = tf.constant([-1 if limit is None else limit + (sp.header is not None) for sp in specs], tf.int64)

    def lines_of(i: tf.Tensor) -> tf.data.Dataset:
        lines = tf.data.TextLineDataset(paths[i]).take(takes[i])
        return lines.enumerate().map(lambda j, line: (i, j, line))

    def parse_map(i: tf.Tensor, j: tf.Tensor, line: tf.Tensor) -> tuple[tf.Tensor, ...]:
        out = tf.numpy_function(parse, [i, j, line], (tf.string, tf.int32, tf.int64), stateful=False)
        return tuple(tf.ensure_shape(t, [None]) for t in out)

    ds = tf.data.Dataset.range(len(specs))
    if reading.shuffle:
        ds = ds.shuffle(len(specs), seed=reading.opts.seed)
    ds = ds.interleave(lines_of, cycle_length=min(len(specs), reading.opts.cycle_length or len(specs)), block_length=1)
    ds = ds.batch(256).map(parse_map, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    return _shard_rows(ds, reading), tf.data.experimental.AutoShardPolicy.DATA


def _shard_rows(ds: tf.data.Dataset, reading: _Reading) -> tf.data.Dataset:
    n_pipes, pipe_id = reading.pipelines
    return ds.shard(n_pipes, pipe_id) if n_pipes > 1 else ds


def _image_maker(
    payload: str, augment: bool | Mapping[str, float], image_size: int, encoding: str, opts: PipelineOptions
) -> Callable[..., np.ndarray]:
    """The NumPy function that turns a batch of packed strokes (``payload="strokes"``), of
    shard blocks (``"blocks"``: two arguments, the blocks and their drawings' lengths) - both
    rendered, redrawn first when ``augment`` - or of bitmaps (``"bitmaps"``, resized) into
    ``uint8`` images."""
    import cv2

    cv2.setNumThreads(1)  # one OpenCV thread per call: tf.data already renders in parallel
    style = dict(encoding=encoding, layout=opts.layout, line_width=opts.line_width)
    if augment:
        if payload == "bitmaps":
            raise ValueError("augment redraws strokes: numpy bitmaps carry none")
        hand = {} if augment is True else dict(augment)
        augment_strokes([], np.random.default_rng(0), **hand)  # bad settings fail here, not in tf.data
        rng = np.random.default_rng(opts.seed)

        def redrawn(*batch: np.ndarray) -> np.ndarray:
            packed = _block_drawings(*batch) if payload == "blocks" else batch[0]
            return render_batch(augment_strokes([unpack_strokes(d) for d in packed], rng, **hand), image_size, **style)

        return redrawn
    if payload == "strokes":
        return lambda packed: render_packed_batch(list(packed), image_size, **style)
    if payload == "blocks":
        return lambda blocks, lengths: render_packed_blocks(blocks.tolist(), lengths, image_size, **style)
    if encoding != "plain":
        raise ValueError("numpy bitmaps carry no stroke order or time: use encoding='plain'")
    return lambda b: _resize_bitmap_batch(b, image_size, 1)


CHUNK = 16  # rows per generator call


def _chunks(rows: Iterator[tuple[bytes, int, int]]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    buf: list[tuple[bytes, int, int]] = []
    for row in rows:
        buf.append(row)
        if len(buf) == CHUNK:
            yield _stack(buf)
            buf = []
    if buf:
        yield _stack(buf)


def _stack(buf: list[tuple[bytes, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data, labels, keys = zip(*buf, strict=True)
    return np.array(data, dtype=object), np.array(labels, np.int32), np.array(keys, np.int64)


@dataclass(frozen=True)
class _FileSpec:
    path: Path
    header: CsvHeader | None  # None: ndjson
    is_test: bool


def _file_specs(files: list[Path], strict: bool, report: ReadReport | None) -> list[_FileSpec]:
    specs = []
    for f in files:
        if detect_format(f) == "kaggle_csv":
            hdr = read_csv_header(f, strict=strict, report=report)
            if hdr is not None:
                specs.append(_FileSpec(f, hdr, hdr.word is None))
        else:
            specs.append(_FileSpec(f, None, False))
    return specs


def _row_parser(
    specs: list[_FileSpec],
    labels: LabelMap | None,
    split: str,
    val_fraction: float,
    split_seed: int,
    recognized_only: bool,
    strict: bool,
    report: ReadReport | None,
):
    """A NumPy function: (file index, line index, line text) batches -> packed drawings."""

    def parse(fidx: np.ndarray, lidx: np.ndarray, lines: np.ndarray):
        n = len(lines)
        packed = np.full(n, b"", dtype=object)
        out_labels = np.full(n, -1, np.int32)
        keys = np.zeros(n, np.int64)
        ok = np.zeros(n, bool)
        for r in range(n):
            spec = specs[int(fidx[r])]
            line_no = int(lidx[r]) + 1
            line = lines[r]
            if spec.header is not None:
                if line_no == 1 or not line.strip():
                    continue  # the header; blank lines
                try:
                    row = next(csv.reader([line.decode("utf-8")]))
                except (csv.Error, UnicodeDecodeError) as exc:
                    if strict:
                        raise QuickDrawFormatError(spec.path, line_no, f"malformed CSV ({exc})") from None
                    if report is not None:
                        report.bad(spec.path, line_no, f"malformed CSV ({exc})")
                    continue
                d = parse_csv_row(
                    row,
                    spec.header,
                    spec.path,
                    line_no,
                    labels=None if spec.is_test else labels,
                    strict=strict,
                    report=report,
                )
            else:
                d = parse_ndjson_line(line, spec.path, line_no, labels=labels, strict=strict, report=report)
            if d is None or (recognized_only and not d.recognized):
                continue
            if _in_split(d.key_id, split, val_fraction, split_seed):
                packed[r] = pack_strokes(d.strokes)
                out_labels[r] = d.label
                keys[r] = d.key_id
                ok[r] = True
        return packed[ok], out_labels[ok], keys[ok]

    return parse


def _npy_generator(labels, val_fraction, split_seed, split, limit, strict, report):
    def gen(path: bytes):
        p = Path(path.decode() if isinstance(path, bytes) else str(path))
        word = google_name(p.stem)
        label = labels.get(word) if labels is not None else -1
        if label is None:
            if strict:
                from quickdraw.formats import QuickDrawFormatError

                raise QuickDrawFormatError(p, None, f"unknown class name {word!r}")
            if report is not None:
                report.bad(p, None, f"unknown class name {word!r}")
            return
        arr = read_npy_bitmaps(p, strict=strict, report=report, mmap=True)
        n = len(arr) if limit is None else min(limit, len(arr))
        rows = (
            (np.ascontiguousarray(arr[r]).tobytes(), label, npy_key_id(word, r))
            for r in range(n)
            if _in_split(npy_key_id(word, r), split, val_fraction, split_seed)
        )
        yield from _chunks(rows)

    return gen
