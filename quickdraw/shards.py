"""One-time "shuffle into K shards": Quick, Draw! files -> shuffled TFRecord shards.

The per-class files of Quick, Draw! are sorted by class, so a shuffle buffer alone mixes
classes poorly. The well-known Kaggle preprocessing shuffled the data once into K files
and trained from those; :func:`write_shards` does the same into TFRecord files:

1. read every class file once (a tqdm bar over the files), deal its drawings out to the
   shards of their split in turn from a random first shard (split by key_id, as in
   ``make_dataset``), so every shard holds each class's share to within one drawing:
   **class-balanced** shards, where every stretch of training sees every class at its
   overall rate (reading class files round-robin does not: the small classes run out
   first and the last steps of an epoch see only the large ones);
2. load each shard (1/K of the data) into memory, shuffle it, and write
   ``<split>-<i>-of-<K>.tfrecord`` (a tqdm bar over the shards) in **blocks**: each record
   holds ``block_size`` consecutive drawings of the shuffled shard (a random sample of it),
   the last block of a shard the rest.

Both steps run in ``workers`` processes: for the real data the one-time Python parse is
the expensive part, and processes are not held up by Python's lock as threads are.
Training then reads the shards without any Python parsing (``TFRecordDataset``).

``make_dataset(out_dir, split=...)`` then reads the shards with ``auto_shard_policy =
FILE``: each worker of a multi-worker job reads its own files, so write at least as many
shards as there will be workers. ``scripts/train_quickdraw.py`` writes them itself, once,
before training (its default input). Each record (a ``tf.train.Example``) is one block:
``points`` (one string: the block's drawings packed by :func:`quickdraw.pipeline.pack_strokes`,
end to end), ``lengths`` (points per drawing), ``labels`` and ``key_ids`` (lists of as many
int64). Reading then pays each per-record cost (the record's checksum and framing, the shuffle
buffer, the hand-offs between tf.data stages, the parse call) once per block, not once per
drawing (issue 33: those costs were a third of the pipeline's time), and a batch of blocks
reaches the renderer as a few strings, not one Python object per drawing. The manifest
records ``format`` (:data:`SHARD_FORMAT`);
shards of an older format are rewritten by :func:`ensure_shards` and refused, with the way
out, by ``make_dataset`` (:func:`quickdraw.pipeline.shard_block_size`, from the manifest).
Used in notebooks 06 and 08 and the benchmarks (``bench_pipeline*.py``).
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
from quickdraw.pipeline import (  # SHARD_FORMAT: the reader refuses other formats
    SHARD_FORMAT,
    iter_examples,
    pack_strokes,
    resolve_labels,
    resolve_source,
    split_of,
)
from quickdraw.render import POINT_BYTES

BLOCK_SIZE = 64  # drawings per record by default (CHANGELOG.md: the measured choice)


def shard_name(split: str, index: int, num_shards: int) -> str:
    """``train-00003-of-00008.tfrecord``."""
    return f"{split}-{index:05d}-of-{num_shards:05d}.tfrecord"


def _example(packed: bytes, label: int, key_id: int) -> bytes:
    """One drawing as a record: the temporary pieces of phase 1 (:func:`_split_file`)."""
    import tensorflow as tf

    feature = {
        "drawing": tf.train.Feature(bytes_list=tf.train.BytesList(value=[packed])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
        "key_id": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(key_id)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)


def _block(packed: Sequence[bytes], labels: np.ndarray, key_ids: np.ndarray) -> bytes:
    """Drawings as one record of a shard (format 3): ``points`` (their packed strokes end to
    end, one string), ``lengths`` (points per drawing), ``labels``, ``key_ids``."""
    import tensorflow as tf

    feature = {
        "points": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"".join(packed)])),
        "lengths": tf.train.Feature(int64_list=tf.train.Int64List(value=[len(d) // POINT_BYTES for d in packed])),
        "labels": tf.train.Feature(int64_list=tf.train.Int64List(value=labels.tolist())),
        "key_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=key_ids.tolist())),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)


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
    recognized_only: bool = False,
    strict: bool = False,
    report: ReadReport | None = None,
    progress: bool = True,
    fmt: str | None = None,
    workers: int | None = 1,
    block_size: int = BLOCK_SIZE,
) -> dict[str, Any]:
    """Shuffle ``source`` once into ``num_shards`` TFRecord files per split under ``out_dir``,
    ``block_size`` drawings per record.

    Returns the manifest also written to ``out_dir/manifest.json`` (shard files and
    counts per split, per shard and per class, which ``count_examples`` reads, and the
    settings: a caller compares them to reuse the shards); ``labels.json`` is written beside
    the shards. ``workers`` processes parse the class files and then shuffle the shards in
    parallel (``None``: one per CPU core; 1: in this process), so the one-time parse of
    Kaggle's 50 million rows is not held up by Python's lock; the result is the same for
    any number of workers (each class file and each shard has its own seeded random
    stream). ``progress=False`` hides the tqdm bars. Used in notebook 06 and the benchmarks.
    """
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
                labels=list(labels.names), limit_per_class=limit_per_class, recognized_only=recognized_only,
                strict=strict, tmp=str(out / ".unshuffled"), want_report=report is not None)  # fmt: skip
    workers = (os.cpu_count() or 1) if workers is None else max(1, workers)
    counts, per_class = _write_in_workers(files, opts, out, len(labels), block_size, workers, progress, report)
    labels.save(out / "labels.json")
    manifest = {
        "format": SHARD_FORMAT,
        "block_size": block_size,
        **{k: opts[k] for k in ("num_shards", "val_fraction", "split_seed", "seed", "limit_per_class")},
        "recognized_only": recognized_only,
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
    """The two phases of :func:`write_shards` in ``workers`` processes (1: in this one):
    every class file dealt out to the shards (:func:`_split_file`), then every shard shuffled
    and written (:func:`_shuffle_shard`), through pieces in ``opts["tmp"]`` (removed after).
    Returns the drawings per shard and per class, by split."""
    from tqdm.auto import tqdm

    shutil.rmtree(opts["tmp"], ignore_errors=True)
    Path(opts["tmp"]).mkdir(parents=True)
    num_shards = opts["num_shards"]
    counts = {s: [0] * num_shards for s in ("train", "val")}
    per_class = {s: [0] * n_labels for s in ("train", "val")}
    pool = multiprocessing.get_context("spawn").Pool(workers) if workers > 1 else None  # no fork of a TF process
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
                      for s in counts for i in range(num_shards)]  # fmt: skip
        list(tqdm(mapper(_shuffle_shard, shard_jobs), total=len(shard_jobs), desc="shuffle shards",
                  unit="shard", disable=not progress))  # fmt: skip
    finally:
        if pool is not None:
            pool.terminate()  # stops the workers also after an error or Ctrl-C
            pool.join()
        shutil.rmtree(opts["tmp"], ignore_errors=True)
    return counts, per_class


def _split_file(job: tuple[str, int, dict]) -> tuple[dict[tuple[str, int, int], int], ReadReport | None]:
    """Phase 1, one class file: its drawings dealt out to the shards of their split in turn,
    from a random first shard per split (so each shard gets the class's share to within
    one drawing), as pieces ``<tmp>/<split>-<shard>/<file index>.tfrecord``. Returns counts
    per (split, shard, label). Runs in a worker process."""
    import tensorflow as tf

    path, index, o = job
    rng = np.random.default_rng([o["seed"], index])
    report = ReadReport() if o["want_report"] else None
    writers: dict[tuple[str, int], Any] = {}
    counts: dict[tuple[str, int, int], int] = {}
    # the next shard of each split; the random start spreads the remainders over the shards
    turn = {s: int(rng.integers(o["num_shards"])) for s in ("train", "val")}
    try:
        rows = iter_examples([path], split="all", labels=LabelMap(o["labels"]), limit_per_class=o["limit_per_class"],
                             recognized_only=o["recognized_only"], strict=o["strict"], report=report)  # fmt: skip
        for strokes, label, key_id in rows:
            split = split_of(key_id, o["val_fraction"], o["split_seed"])
            where = (split, turn[split])
            turn[split] = (turn[split] + 1) % o["num_shards"]
            if where not in writers:
                piece = Path(o["tmp"]) / f"{where[0]}-{where[1]}" / f"{index:06d}.tfrecord"
                piece.parent.mkdir(parents=True, exist_ok=True)
                writers[where] = tf.io.TFRecordWriter(str(piece))
            writers[where].write(_example(pack_strokes(strokes), label, key_id))
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
            "key_id": tf.io.FixedLenFeature([], tf.int64)}  # fmt: skip
    parsed = [tf.io.parse_example(b, spec) for p in pieces for b in tf.data.TFRecordDataset(str(p)).batch(4096)]
    drawings = [d for e in parsed for d in e["drawing"].numpy()]
    labels = np.concatenate([e["label"].numpy() for e in parsed] or [np.zeros(0, np.int64)])
    keys = np.concatenate([e["key_id"].numpy() for e in parsed] or [np.zeros(0, np.int64)])
    order = np.random.default_rng([seed, ("train", "val").index(split), i, 1]).permutation(len(drawings))
    with tf.io.TFRecordWriter(str(Path(out) / shard_name(split, i, num_shards))) as w:
        for a in range(0, len(order), block):
            j = order[a : a + block]
            w.write(_block([drawings[k] for k in j], labels[j], keys[j]))


def _wanted(source: str | Path | Sequence[str | Path], num_shards: int, val_fraction: float,
            limit_per_class: int | None) -> dict[str, Any]:
    """The manifest entries that must match for existing shards to be reused (the format too:
    shards of an older format are written again, not misread)."""
    _, files, _ = resolve_source(source, None)
    return {"format": SHARD_FORMAT, "num_shards": num_shards, "val_fraction": val_fraction,
            "limit_per_class": limit_per_class, "source": [str(Path(f).resolve()) for f in files]}


def _matching_manifest(out: Path, wanted: dict[str, Any]) -> dict[str, Any] | None:
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

    Shards whose ``manifest.json`` records the same format (:data:`SHARD_FORMAT`), source
    files, shard count, validation fraction and limit are reused (the manifest is written last, so its presence means
    the shards are complete). Otherwise, with ``write=True`` (the chief of a job) they are
    written by :func:`write_shards` (``kwargs``: its other options); with ``write=False``
    (the other workers) this waits up to ``wait_seconds`` for the chief's manifest and
    raises ``TimeoutError`` after. Used by ``scripts/train_quickdraw.py`` (notebook 06).
    """
    import time

    out = Path(out_dir)
    wanted = _wanted(source, num_shards, val_fraction, limit_per_class)
    deadline = time.monotonic() + wait_seconds
    while (manifest := _matching_manifest(out, wanted)) is None:
        if write:
            (out / "manifest.json").unlink(missing_ok=True)  # stale: the shards are about to change
            return write_shards(source, out, num_shards=num_shards, val_fraction=val_fraction,
                                limit_per_class=limit_per_class, **kwargs), True  # fmt: skip
        if time.monotonic() > deadline:
            raise TimeoutError(f"no shards of {source} in {out} after {wait_seconds:.0f} s")
        time.sleep(0.5)
    return manifest, False
