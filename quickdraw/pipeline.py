"""tf.data input pipelines for Quick, Draw! data in any published format.

``make_dataset(source, split="train", ...)`` gives batches of ``(images, labels)``: ``float32``
images ``(batch, size, size, C)`` in [0, 1] (or ``uint8``) and ``int32`` labels, in three stages:

    read     class files line by line, round-robin, parsed in NumPy a batch of lines at a time;
             .npy bitmaps; or TFRecord shards of :mod:`quickdraw.shards` (blocks of drawings)
             --> shuffle --> batches of drawings
    render   a parallel map that draws several batches a call (bitmaps are resized)
    batch    rebatch to ``batch_size``, prefetch, the auto-shard policy

The train/val split is a hash of each ``key_id``: a drawing is in one split whatever the file
order, the shuffle or the number of workers. Multi-worker: shards are auto-sharded by ``FILE``
(each worker reads its own files), class files by ``DATA``; or pass ``input_context=``.
Used in notebooks 04-08 and ``scripts/train_quickdraw.py``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from quickdraw.augment import augment_strokes
from quickdraw.counts import split_counts
from quickdraw.formats import (
    CsvHeader,
    Drawing,
    QuickDrawFormatError,
    ReadReport,
    detect_format,
    find_class_files,
    iter_file,
    npy_key_id,
    parse_csv_row,
    parse_ndjson_line,
    read_csv_header,
    read_npy_bitmaps,
)
from quickdraw.labels import LabelMap, google_name
from quickdraw.render import POINT_BYTES, channels_of, render_batch, render_packed_batch, render_packed_blocks

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

SPLITS = ("train", "val", "all")
Source = str | Path | Sequence[str | Path]
_MASK64 = (1 << 64) - 1


# --- The split and the packed form of a drawing ---
def split_of(key_id: int, val_fraction: float = 0.1, seed: int = 0) -> str:
    """``"val"`` for about ``val_fraction`` of all key_ids, else ``"train"``: a uniform number
    in [0, 1) from a splitmix64 hash of ``key_id`` (``seed`` gives another split)."""
    z = (int(key_id) + (seed + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return "val" if (z >> 11) / float(1 << 53) < val_fraction else "train"


def _in_split(key_id: int, split: str, val_fraction: float, seed: int) -> bool:
    return split == "all" or split_of(key_id, val_fraction, seed) == split


def pack_strokes(strokes: Sequence[np.ndarray]) -> bytes:
    """Strokes -> bytes: float32 rows ``(x, y, t, stroke_index)`` (t = -1 when absent), the form
    drawings take in tf.data and in shards; :func:`quickdraw.render.render_packed_batch` draws it."""
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


# --- Sources, labels and counts (no TensorFlow) ---
def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")


def resolve_source(source: Source, fmt: str | None = None) -> tuple[str, list[Path], Path | None]:
    """``(kind, files, root)``: kind ``csv_ndjson``, ``npy`` or ``tfrecord``; root None for a list."""
    if isinstance(source, (str, Path)):
        root: Path | None = Path(source)
        if root.is_file():
            files, root = [root], root.parent
        elif not root.is_dir():
            raise FileNotFoundError(f"no Quick, Draw! data at {root}")
        elif fmt in (None, "tfrecord") and any(root.glob("*.tfrecord")):
            files = sorted(root.glob("*.tfrecord"))
        else:
            files = list(find_class_files(root, fmt).values())
    else:
        files, root = [Path(p) for p in source], None
        if not files:
            raise ValueError("empty list of files")
    kinds = {"tfrecord" if p.suffix == ".tfrecord" else detect_format(p) for p in files}
    if len(kinds) != 1:
        raise ValueError(f"mixed file types {sorted(kinds)}")
    kind = kinds.pop()
    return ("csv_ndjson" if kind in ("kaggle_csv", "ndjson") else kind), files, root


def resolve_labels(source: Source, labels: LabelMap | None = None, fmt: str | None = None) -> LabelMap:
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
    source: Source, *, split: str = "all", labels: LabelMap | None = None, **options: Any
) -> Iterator[tuple[list[np.ndarray], int, int]]:
    """Yield ``(strokes, label, key_id)`` in file order, without TensorFlow, filtered as
    :func:`make_dataset` filters them (``options``: :class:`PipelineOptions` such as
    ``limit_per_class``, ``strict``, ``report``). Used in notebook 06 and the shards."""
    o = PipelineOptions(**options)
    _check_split(split)
    kind, files, _ = resolve_source(source, o.fmt)
    if kind != "csv_ndjson":
        raise ValueError(f"iter_examples reads .csv/.ndjson files, not {kind}")
    labels = resolve_labels(source, labels, o.fmt)
    for path in files:
        for d in iter_file(path, labels=labels, strict=o.strict, report=o.report, limit=o.limit_per_class):
            if _in_split(d.key_id, split, o.val_fraction, o.split_seed):
                yield d.strokes, d.label, d.key_id


def count_examples(
    source: Source, *, split: str = "train", labels: LabelMap | None = None, **options: Any
) -> int:
    """How many examples :func:`make_dataset` yields per pass with the same arguments, for
    ``steps_per_epoch``: from shards' manifest, or class files parsed once and their counts kept
    (:mod:`quickdraw.counts`; ``strict=True`` or a ``report=`` reads them again). Used in
    notebooks 06, 08 and ``scripts/train_quickdraw.py``."""
    options = {k: v for k, v in options.items() if k in _WHICH_DRAWINGS}
    o = PipelineOptions(**options)
    _check_split(split)
    kind, files, root = resolve_source(source, o.fmt)
    if kind == "tfrecord":
        manifest, chosen = shard_manifest(files), {f.name for f in _tfrecord_files(files, split)}
        per_shard = manifest["counts_per_shard"]
        return sum(n for s in per_shard for f, n in zip(manifest["files"][s], per_shard[s], strict=True)
                   if f in chosen)
    if kind == "npy":
        n = 0
        for p in files:
            rows = len(read_npy_bitmaps(p, strict=o.strict, mmap=True))
            word = google_name(p.stem)
            keys = (npy_key_id(word, r) for r in range(min(rows, o.limit_per_class or rows)))
            n += sum(_in_split(k, split, o.val_fraction, o.split_seed) for k in keys)
        return n
    if o.strict or o.report is not None:
        return sum(1 for _ in iter_examples(source, split=split, labels=labels, **options))
    labels = resolve_labels(source, labels, o.fmt)

    def count_file(path: Path) -> dict[str, int]:
        c = {"train": 0, "val": 0, "all": 0}
        for d in iter_file(path, labels=labels, limit=o.limit_per_class):
            c["all"] += 1
            c[split_of(d.key_id, o.val_fraction, o.split_seed)] += 1
        return c

    return split_counts(files, {**asdict(o), "labels": labels.names}, count_file, root)[split]


SHARD_FORMAT = 3  # blocks of drawings, a block's points in one string
_OLDER_SHARDS = {1: "one drawing per record", 2: "blocks with a string per drawing"}


def shard_manifest(files: Sequence[str | Path]) -> dict[str, Any]:
    """The ``manifest.json`` that :func:`quickdraw.write_shards` wrote beside ``files``; raises
    ``ValueError`` with the way out when it is missing or records another ``format`` than
    :data:`SHARD_FORMAT` (none recorded: format 1)."""
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
            f"reads format {SHARD_FORMAT}. Write them again: quickdraw.ensure_shards(source, out_dir, ...) "
            "rewrites shards of an older format (or delete the folder and call quickdraw.write_shards)"
        )
    return manifest


def _tfrecord_files(files: list[Path], split: str) -> list[Path]:
    chosen = [f for f in files if split == "all" or f.name.startswith(split + "-")]
    if not chosen:
        raise FileNotFoundError(f"no {split}-*.tfrecord shards among {[f.name for f in files][:4]}")
    return chosen


# --- make_dataset: read -> render -> batch ---
@dataclass(frozen=True)
class PipelineOptions:
    """The settings of :func:`make_dataset` beyond the everyday ones, passed to it as keywords
    (``make_dataset(path, limit_per_class=100, num_parallel_calls=1)``); the defaults suit
    training. How to choose the render threads: ``quickdraw/README.md``."""

    # which drawings
    limit_per_class: int | None = None  # at most this many drawings of each class file
    val_fraction: float = 0.1  # about this share of the key_ids is the "val" split
    split_seed: int = 0  # another seed, other key_ids in "val"
    fmt: str | None = None  # which format of a folder holding several (find_class_files)
    strict: bool = False  # a bad row raises (when iterating), else it is skipped
    report: ReadReport | None = None  # counts the bad rows; read it after a full pass
    # what a batch holds
    image_dtype: str = "float32"  # "uint8": pixels 0-255, to be scaled in the training step
    with_key_id: bool = False  # batches of (images, labels, key_ids)
    # order and speed
    seed: int | None = 42  # the shuffle's and the augmentation's
    shuffle_buffer: int = 4096  # drawings
    num_parallel_calls: int | None = None  # render threads (None: tf.data autotunes them)
    render_call_drawings: int = 2048  # at most this many drawings a render call, then rebatched

    def __post_init__(self) -> None:
        if self.image_dtype not in ("float32", "uint8"):
            raise ValueError(f"image_dtype must be 'float32' or 'uint8', not {self.image_dtype!r}")


# the options that choose the drawings (count_examples ignores the others)
_WHICH_DRAWINGS = {"limit_per_class", "val_fraction", "split_seed", "fmt", "strict", "report"}


@dataclass(frozen=True)
class _Reading:
    """What the read stage needs: which rows, in which order, for which input pipeline."""

    split: str
    shuffle: bool
    labels: LabelMap | None  # None for shards (their records hold label indices)
    opts: PipelineOptions
    pipelines: tuple[int, int]  # (how many input pipelines, this one's id)


def make_dataset(
    source: Source,
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

    ``source``: a folder in Kaggle (``train_simplified/*.csv``) or Google (``simplified/``,
    ``raw/``, ``numpy_bitmap/``) layout, a folder of TFRecord shards, one file (e.g.
    ``test_simplified.csv``: labels are -1) or a list of files. Images ``(image_size,
    image_size, C)``, C from ``encoding`` (:mod:`quickdraw.render`); labels index ``labels``
    (default :func:`resolve_labels`). ``split``: ``"train"``, ``"val"`` or ``"all"``;
    ``shuffle`` defaults to True for ``"train"``; ``repeat``: endless. ``augment``: redraw every
    drawing under a fresh random hand each pass (:func:`quickdraw.augment_strokes`: True or a
    dict of its keywords). ``input_context``: a ``tf.distribute.InputContext``, to shard by
    hand. ``options``: fields of :class:`PipelineOptions`.
    """
    opts = PipelineOptions(**options)
    _check_split(split)
    kind, files, _ = resolve_source(source, opts.fmt)
    pipelines = (1, 0)
    if input_context is not None:
        pipelines = (input_context.num_input_pipelines, input_context.input_pipeline_id)
    shuffle = split == "train" if shuffle is None else shuffle
    label_map = None if kind == "tfrecord" else resolve_labels(source, labels, opts.fmt)
    reading = _Reading(split, shuffle, label_map, opts, pipelines)
    pixel_bytes = channels_of(encoding) * (4 if opts.image_dtype == "float32" else 1)
    most = opts.render_call_drawings
    per_call = batch_size if augment else drawings_per_call(batch_size, image_size**2 * pixel_bytes, most)
    rebatch = kind == "tfrecord" or per_call != batch_size  # shards come in whole blocks
    ds, policy = _read(kind, files, reading, per_call, repeat, drop_remainder and not rebatch)
    ds = _render(ds, kind, image_size, encoding, augment, opts)
    return _batch(ds, batch_size, rebatch, drop_remainder, policy, opts)


_RENDER_CALL_BYTES = 16 << 20  # one render call's images at most


def drawings_per_call(
    batch_size: int, image_bytes: int, most: int = PipelineOptions.render_call_drawings
) -> int:
    """The drawings of one render call: a whole number of batches, at most ``most`` and
    16 MiB of images, at least one batch (each call of a ``tf.numpy_function`` has a fixed cost)."""
    cap = min(most, _RENDER_CALL_BYTES // max(1, image_bytes))
    return batch_size * max(1, cap // batch_size)


def _read(
    kind: str, files: list[Path], reading: _Reading, batch_size: int, repeat: bool, drop_remainder: bool
) -> tuple[tf.data.Dataset, Any]:
    """The read stage: batches of ``batch_size`` ``(packed strokes or bitmaps, labels, key_ids)``
    (shards: ``((points, lengths), labels, key_ids)`` of whole blocks), and the auto-shard policy."""
    if kind == "tfrecord":
        files = _tfrecord_files(files, reading.split)
        block = int(shard_manifest(files)["block_size"])  # raises on shards of an older format
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
    """The render stage: a parallel map of :func:`_image_maker`, ``uint8`` images (then
    ``float32`` in [0, 1] unless ``opts.image_dtype`` is ``"uint8"``)."""
    import tensorflow as tf

    payload = {"npy": "bitmaps", "tfrecord": "blocks"}.get(kind, "strokes")
    to_images = _image_maker(payload, augment, image_size, encoding, opts.seed)

    def render_map(data: tf.Tensor | tuple[tf.Tensor, tf.Tensor], label: tf.Tensor, key: tf.Tensor):
        inputs = list(data) if isinstance(data, tuple) else [data]  # blocks: (points, lengths)
        images = tf.numpy_function(to_images, inputs, tf.uint8, stateful=bool(augment))
        if opts.image_dtype == "float32":
            images = tf.cast(images, tf.float32) * (1.0 / 255.0)
        return tf.ensure_shape(images, [None, image_size, image_size, channels_of(encoding)]), label, key

    threads = opts.num_parallel_calls or tf.data.AUTOTUNE
    return ds.map(render_map, num_parallel_calls=threads, deterministic=True)


def _batch(
    ds: tf.data.Dataset, batch_size: int, rebatch: bool, drop_remainder: bool, policy: Any,
    opts: PipelineOptions,
) -> tf.data.Dataset:
    """The batch stage: render calls cut into batches of ``batch_size``, shapes, prefetch, options."""
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
    if opts.seed is not None:
        options.deterministic = True
    return ds.with_options(options)


# --- The readers ---
def _read_records(files: list[Path], reading: _Reading) -> tuple[tf.data.Dataset, Any]:
    """TFRecord shards: serialized blocks of drawings; each worker its own files (``FILE``)."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices([str(f) for f in files])
    n_pipes, pipe_id = reading.pipelines
    if n_pipes > 1:
        if len(files) < n_pipes:
            raise ValueError(
                f"{len(files)} shard files cannot feed {n_pipes} input pipelines; write more shards"
            )
        ds = ds.shard(n_pipes, pipe_id)
    if reading.shuffle:
        ds = ds.shuffle(len(files), seed=reading.opts.seed)
    # one thread reads the files in turn: a deterministic interleave at the least CPU per record
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4))
    return ds, tf.data.experimental.AutoShardPolicy.FILE


def _parse_blocks(ds: tf.data.Dataset) -> tf.data.Dataset:
    """Batches of serialized blocks → ``((points, lengths), labels, key_ids)``: ``parse_example``
    on the batch, in the thread that asks for it (no hand-off between threads)."""
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
    """``.npy`` bitmaps: a generator per file, files interleaved; ``DATA`` auto-sharding."""
    import tensorflow as tf

    gen = _npy_generator(reading)
    sig = (tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int64))
    ds = tf.data.Dataset.from_tensor_slices([str(f) for f in files])
    if reading.shuffle:
        ds = ds.shuffle(len(files), seed=reading.opts.seed)
    ds = ds.interleave(
        lambda p: tf.data.Dataset.from_generator(gen, args=(p,), output_signature=sig),
        cycle_length=len(files),
        block_length=1,
    )
    return _shard_rows(ds.unbatch(), reading), tf.data.experimental.AutoShardPolicy.DATA


def _read_strokes(files: list[Path], reading: _Reading) -> tuple[tf.data.Dataset, Any]:
    """CSV or ndjson class files: lines read round-robin (classes mixed from the first batch on),
    parsed and split in NumPy 256 lines a call; ``DATA`` auto-sharding."""
    import tensorflow as tf

    o = reading.opts
    specs = []  # (file, its CSV header or None for ndjson); CSVs without a readable header left out
    for f in files:
        if detect_format(f) == "ndjson":
            specs.append((f, None))
        elif (header := read_csv_header(f, strict=o.strict, report=o.report)) is not None:
            specs.append((f, header))
    if not specs:
        raise FileNotFoundError(f"no readable Quick, Draw! files among {[f.name for f in files][:4]}")
    parse = _row_parser(specs, reading)
    paths = tf.constant([str(path) for path, _ in specs])
    limit = o.limit_per_class
    # the first `limit` drawings: a CSV's header is one line more
    takes = tf.constant([-1 if limit is None else limit + (h is not None) for _, h in specs], tf.int64)

    def lines_of(i: tf.Tensor) -> tf.data.Dataset:
        lines = tf.data.TextLineDataset(paths[i]).take(takes[i])
        return lines.enumerate().map(lambda j, line: (i, j, line))

    def parse_map(i: tf.Tensor, j: tf.Tensor, line: tf.Tensor) -> tuple[tf.Tensor, ...]:
        out = tf.numpy_function(parse, [i, j, line], (tf.string, tf.int32, tf.int64), stateful=False)
        return tuple(tf.ensure_shape(t, [None]) for t in out)

    ds = tf.data.Dataset.range(len(specs))
    if reading.shuffle:
        ds = ds.shuffle(len(specs), seed=o.seed)
    ds = ds.interleave(lines_of, cycle_length=len(specs), block_length=1)
    ds = ds.batch(256).map(parse_map, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    return _shard_rows(ds, reading), tf.data.experimental.AutoShardPolicy.DATA


def _shard_rows(ds: tf.data.Dataset, reading: _Reading) -> tf.data.Dataset:
    n_pipes, pipe_id = reading.pipelines
    return ds.shard(n_pipes, pipe_id) if n_pipes > 1 else ds


# --- The NumPy functions inside the pipeline ---
def _columns(rows: list[tuple[bytes, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``(packed strokes or bitmap, label, key_id)`` -> a reader's three arrays."""
    data, labels, keys = zip(*rows, strict=True) if rows else ((), (), ())
    return np.array(data, dtype=object), np.array(labels, np.int32), np.array(keys, np.int64)


def _skip(strict: bool, report: ReadReport | None, path: Path, line: int | None, reason: str) -> None:
    """A bad row or file: raise (``strict``), else count it in ``report``."""
    if strict:
        raise QuickDrawFormatError(path, line, reason)
    if report is not None:
        report.bad(path, line, reason)


def _parse_line(
    path: Path, header: CsvHeader | None, line_no: int, line: bytes, labels: LabelMap | None,
    opts: PipelineOptions,
) -> Drawing | None:
    """A class file's line (``header``: the CSV's; None: ndjson) -> its drawing, or None (skipped)."""
    if header is None:
        return parse_ndjson_line(line, path, line_no, labels=labels, strict=opts.strict, report=opts.report)
    if line_no == 1 or not line.strip():
        return None
    try:
        row = next(csv.reader([line.decode("utf-8")]))
    except (csv.Error, UnicodeDecodeError) as exc:
        _skip(opts.strict, opts.report, path, line_no, f"malformed CSV ({exc})")
        return None
    # a test file's header has no word column: its labels are -1
    return parse_csv_row(row, header, path, line_no, labels=labels, strict=opts.strict, report=opts.report)


def _row_parser(specs: list[tuple[Path, CsvHeader | None]], reading: _Reading) -> Callable[..., tuple]:
    """A NumPy function: (file index, line index, line) batches -> the rows of the split."""
    o = reading.opts

    def parse(fidx: np.ndarray, lidx: np.ndarray, lines: np.ndarray) -> tuple[np.ndarray, ...]:
        rows = []
        for i, j, line in zip(fidx.tolist(), lidx.tolist(), lines.tolist(), strict=True):
            path, header = specs[i]
            d = _parse_line(path, header, j + 1, line, reading.labels, o)
            if d is not None and _in_split(d.key_id, reading.split, o.val_fraction, o.split_seed):
                rows.append((pack_strokes(d.strokes), d.label, d.key_id))
        return _columns(rows)

    return parse


CHUNK = 16  # rows per generator call


def _npy_generator(reading: _Reading) -> Callable[[bytes], Iterator[tuple[np.ndarray, ...]]]:
    """A generator function: a ``.npy`` file's name -> its rows of the split, ``CHUNK`` at a time."""
    o = reading.opts

    def gen(path: bytes) -> Iterator[tuple[np.ndarray, ...]]:
        p = Path(path.decode())
        word = google_name(p.stem)
        label = reading.labels.get(word)  # type: ignore[union-attr]
        if label is None:
            _skip(o.strict, o.report, p, None, f"unknown class name {word!r}")
            return
        arr = read_npy_bitmaps(p, strict=o.strict, report=o.report, mmap=True)
        n = len(arr) if o.limit_per_class is None else min(o.limit_per_class, len(arr))
        keys = [npy_key_id(word, r) for r in range(n)]
        rows = [r for r in range(n) if _in_split(keys[r], reading.split, o.val_fraction, o.split_seed)]
        for a in range(0, len(rows), CHUNK):
            yield _columns([(arr[r].tobytes(), label, keys[r]) for r in rows[a : a + CHUNK]])

    return gen


def _resize_bitmap_batch(raw: np.ndarray, size: int) -> np.ndarray:
    import cv2

    interpolation = cv2.INTER_AREA if size < 28 else cv2.INTER_LINEAR
    out = np.empty((len(raw), size, size, 1), np.uint8)
    for i, data in enumerate(raw):
        img = np.frombuffer(data, np.uint8).reshape(28, 28)
        out[i, :, :, 0] = img if size == 28 else cv2.resize(img, (size, size), interpolation=interpolation)
    return out


def _image_maker(
    payload: str, augment: bool | Mapping[str, float], image_size: int, encoding: str, seed: int | None
) -> Callable[..., np.ndarray]:
    """The NumPy function from a batch of ``payload`` (``"strokes"``, ``"blocks"``: blocks and
    lengths, or ``"bitmaps"``, resized) to ``uint8`` images; strokes redrawn first with ``augment``."""
    import cv2

    cv2.setNumThreads(1)  # one OpenCV thread per call: tf.data already renders in parallel
    style = dict(size=image_size, encoding=encoding)
    if augment:
        if payload == "bitmaps":
            raise ValueError("augment redraws strokes: numpy bitmaps carry none")
        hand = {} if augment is True else dict(augment)
        augment_strokes([], np.random.default_rng(0), **hand)  # bad settings fail here, not in tf.data
        rng = np.random.default_rng(seed)

        def redrawn(*batch: np.ndarray) -> np.ndarray:
            packed = _block_drawings(*batch) if payload == "blocks" else batch[0]
            drawings = augment_strokes([unpack_strokes(d) for d in packed], rng, **hand)
            return render_batch(drawings, **style)

        return redrawn
    if payload == "strokes":
        return lambda packed: render_packed_batch(list(packed), **style)
    if payload == "blocks":
        return lambda points, lengths: render_packed_blocks(points.tolist(), lengths, **style)
    if encoding != "plain":
        raise ValueError("numpy bitmaps carry no stroke order or time: use encoding='plain'")
    return lambda b: _resize_bitmap_batch(b, image_size)
