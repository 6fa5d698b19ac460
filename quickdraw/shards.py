"""One-time "shuffle into K shards": Quick, Draw! class files -> shuffled TFRecord shards.

Class files are sorted by class, so a shuffle buffer alone mixes classes poorly.
:func:`write_shards` deals each class file's drawings out to the shards of their split in turn
(every shard holds each class's share to within one drawing), shuffles each shard and writes
it as ``<split>-<i>-of-<K>.tfrecord`` in blocks: a record holds ``block_size`` drawings
(``points``: their :func:`~quickdraw.pipeline.pack_strokes` end to end; ``lengths``, ``labels``,
``key_ids``), so reading pays each per-record cost once a block. ``manifest.json`` records the
``format`` (:data:`SHARD_FORMAT`), which ``make_dataset`` checks. Used in notebooks 06, 08,
``scripts/train_quickdraw.py`` (through :func:`ensure_shards`) and the benchmarks.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from quickdraw.formats import ReadReport
from quickdraw.labels import LabelMap
from quickdraw.pipeline import (
    SHARD_FORMAT,
    iter_examples,
    pack_strokes,
    resolve_labels,
    resolve_source,
    split_of,
)
from quickdraw.render import POINT_BYTES

BLOCK_SIZE = 64  # drawings per record by default


def shard_name(split: str, index: int, num_shards: int) -> str:
    """``train-00003-of-00008.tfrecord``."""
    return f"{split}-{index:05d}-of-{num_shards:05d}.tfrecord"


def _record(**features: bytes | list[int]) -> bytes:
    """A serialized ``tf.train.Example`` of one string or a list of int64 per feature."""
    import tensorflow as tf

    def feature(value: bytes | list[int]) -> tf.train.Feature:
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=value))

    example = tf.train.Features(feature={k: feature(v) for k, v in features.items()})
    return tf.train.Example(features=example).SerializeToString(deterministic=True)


def write_shards(
    source: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    *,
    num_shards: int = 8,
    val_fraction: float = 0.1,
    split_seed: int = 0,
    seed: int = 42,
    labels: LabelMap | None = None,
    limit_per_class: int | None = None,
    strict: bool = False,
    report: ReadReport | None = None,
    progress: bool = True,
    fmt: str | None = None,
    workers: int | None = 1,
    block_size: int = BLOCK_SIZE,
) -> dict[str, Any]:
    """Shuffle ``source`` once into ``num_shards`` TFRecord files per split under ``out_dir``,
    ``block_size`` drawings per record, with ``labels.json``; returns the manifest also written
    to ``out_dir/manifest.json`` (shard files, counts per split, shard and class, the settings).
    ``workers`` processes parse and shuffle (``None``: one per CPU core; 1: this process); the
    shards are the same for any number. ``progress=False`` hides the tqdm bars."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    kind, files, _ = resolve_source(source, fmt)
    if kind != "csv_ndjson":
        raise ValueError(f"write_shards reads .csv/.ndjson class files, not {kind}")
    labels = resolve_labels(source, labels, fmt)
    out = Path(out_dir)
    opts = dict(num_shards=num_shards, val_fraction=val_fraction, split_seed=split_seed, seed=seed,
                labels=list(labels.names), limit_per_class=limit_per_class, strict=strict,
                tmp=str(out / ".unshuffled"), want_report=report is not None)
    workers = (os.cpu_count() or 1) if workers is None else max(1, workers)
    counts, per_class = _write_in_workers(files, opts, out, len(labels), block_size, workers, progress,
                                          report)
    labels.save(out / "labels.json")
    manifest = {
        "format": SHARD_FORMAT,
        "block_size": block_size,
        **{k: opts[k] for k in ("num_shards", "val_fraction", "split_seed", "seed", "limit_per_class")},
        "source": [str(Path(f).resolve()) for f in files],
        "files": {s: [shard_name(s, i, num_shards) for i in range(num_shards)] for s in counts},
        "counts": {s: sum(c) for s, c in counts.items()},
        "counts_per_shard": counts,
        "counts_per_class": per_class,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _write_in_workers(
    files: list[Path], opts: dict[str, Any], out: Path, n_labels: int, block_size: int, workers: int,
    progress: bool, report: ReadReport | None,
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The two phases of :func:`write_shards` in ``workers`` processes (1: this one), through
    pieces in ``opts["tmp"]``; returns the drawings per shard and per class, by split."""
    from tqdm.auto import tqdm

    shutil.rmtree(opts["tmp"], ignore_errors=True)
    Path(opts["tmp"]).mkdir(parents=True)
    num_shards = opts["num_shards"]
    counts = {s: [0] * num_shards for s in ("train", "val")}
    per_class = {s: [0] * n_labels for s in ("train", "val")}
    # spawned, not forked: a fork of a process running TensorFlow can hang
    pool = multiprocessing.get_context("spawn").Pool(workers) if workers > 1 else None
    try:
        mapper = pool.imap_unordered if pool is not None else map
        jobs = [(str(path), i, opts) for i, path in enumerate(files)]
        for file_counts, file_report in tqdm(
            mapper(_split_file, jobs), total=len(jobs), desc="read classes", unit="file", disable=not progress
        ):
            for (s, i, label), n in file_counts.items():
                counts[s][i] += n
                per_class[s][label] += n
            if report is not None and file_report is not None:
                report.merge(file_report)
        shard_jobs = [(opts["tmp"], str(out), s, i, num_shards, opts["seed"], block_size)
                      for s in counts for i in range(num_shards)]
        list(tqdm(mapper(_shuffle_shard, shard_jobs), total=len(shard_jobs), desc="shuffle shards",
                  unit="shard", disable=not progress))
    finally:
        if pool is not None:
            pool.terminate()  # stops the workers also after an error or Ctrl-C
            pool.join()
        shutil.rmtree(opts["tmp"], ignore_errors=True)
    return counts, per_class


def _split_file(job: tuple[str, int, dict]) -> tuple[dict[tuple[str, int, int], int], ReadReport | None]:
    """Phase 1, one class file: its drawings dealt out to the shards of their split in turn, as
    pieces ``<tmp>/<split>-<shard>/<file index>.tfrecord``; returns counts per (split, shard, label)."""
    import tensorflow as tf

    path, index, o = job
    rng = np.random.default_rng([o["seed"], index])
    report = ReadReport() if o["want_report"] else None
    writers: dict[tuple[str, int], Any] = {}
    counts: dict[tuple[str, int, int], int] = {}
    # the next shard of each split; the random start spreads the remainders over the shards
    turn = {s: int(rng.integers(o["num_shards"])) for s in ("train", "val")}
    try:
        rows = iter_examples([path], labels=LabelMap(o["labels"]), strict=o["strict"], report=report,
                             limit_per_class=o["limit_per_class"])
        for strokes, label, key_id in rows:
            split = split_of(key_id, o["val_fraction"], o["split_seed"])
            where = (split, turn[split])
            turn[split] = (turn[split] + 1) % o["num_shards"]
            if where not in writers:
                piece = Path(o["tmp"]) / f"{where[0]}-{where[1]}" / f"{index:06d}.tfrecord"
                piece.parent.mkdir(parents=True, exist_ok=True)
                writers[where] = tf.io.TFRecordWriter(str(piece))
            piece = _record(drawing=pack_strokes(strokes), label=[int(label)], key_id=[int(key_id)])
            writers[where].write(piece)
            counts[(*where, label)] = counts.get((*where, label), 0) + 1
    finally:
        for w in writers.values():
            w.close()
    return counts, report


def _shuffle_shard(job: tuple[str, str, str, int, int, int, int]) -> None:
    """Phase 2, one shard: its pieces (in class-file order) shuffled into one file, written
    ``block`` drawings per record (the last record the rest)."""
    import tensorflow as tf

    tmp, out, split, i, num_shards, seed, block = job
    pieces = sorted((Path(tmp) / f"{split}-{i}").glob("*.tfrecord"))
    spec = {"drawing": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64),
            "key_id": tf.io.FixedLenFeature([], tf.int64)}
    batches = (b for p in pieces for b in tf.data.TFRecordDataset(str(p)).batch(4096))
    parsed = [tf.io.parse_example(b, spec) for b in batches]
    drawings = [d for e in parsed for d in e["drawing"].numpy()]
    labels = np.concatenate([e["label"].numpy() for e in parsed] or [np.zeros(0, np.int64)])
    keys = np.concatenate([e["key_id"].numpy() for e in parsed] or [np.zeros(0, np.int64)])
    order = np.random.default_rng([seed, ("train", "val").index(split), i, 1]).permutation(len(drawings))
    with tf.io.TFRecordWriter(str(Path(out) / shard_name(split, i, num_shards))) as w:
        for a in range(0, len(order), block):
            j = order[a : a + block]
            chosen = [drawings[k] for k in j]  # a record of format 3: the drawings end to end
            lengths = [len(d) // POINT_BYTES for d in chosen]
            w.write(_record(points=b"".join(chosen), lengths=lengths, labels=labels[j].tolist(),
                            key_ids=keys[j].tolist()))


def _matching_manifest(out: Path, wanted: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest in ``out`` if it holds the ``wanted`` entries, else None."""
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if all(manifest.get(k) == v for k, v in wanted.items()) else None


def ensure_shards(
    source: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    *,
    num_shards: int,
    val_fraction: float = 0.1,
    limit_per_class: int | None = None,
    write: bool = True,
    wait_seconds: float = 0.0,
    **kwargs: Any,
) -> tuple[dict[str, Any], bool]:
    """Shards of ``source`` in ``out_dir``, written once: ``(manifest, written_now)``.

    Shards whose manifest (written last: its presence means they are complete) records the
    same format, source files, shard count, validation fraction and limit are reused. Otherwise
    ``write=True`` (a job's chief) writes them with :func:`write_shards` (``kwargs``: its other
    options), ``write=False`` (the other workers) waits up to ``wait_seconds`` for the chief's
    manifest, then raises ``TimeoutError``. Used by ``scripts/train_quickdraw.py``.
    """
    import time

    out = Path(out_dir)
    _, files, _ = resolve_source(source)
    wanted = {"format": SHARD_FORMAT, "num_shards": num_shards, "val_fraction": val_fraction,
              "limit_per_class": limit_per_class,
              "source": [str(Path(f).resolve()) for f in files]}
    deadline = time.monotonic() + wait_seconds
    while (manifest := _matching_manifest(out, wanted)) is None:
        if write:
            (out / "manifest.json").unlink(missing_ok=True)  # stale: the shards are about to change
            return write_shards(source, out, num_shards=num_shards, val_fraction=val_fraction,
                                limit_per_class=limit_per_class, **kwargs), True
        if time.monotonic() > deadline:
            raise TimeoutError(f"no shards of {source} in {out} after {wait_seconds:.0f} s")
        time.sleep(0.5)
    return manifest, False
