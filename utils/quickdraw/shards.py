"""One-time "shuffle into K shards": Quick, Draw! files -> shuffled TFRecord shards.

The per-class files of Quick, Draw! are sorted by class, so a shuffle buffer alone mixes
classes poorly. The well-known Kaggle preprocessing shuffled the data once into K files
and trained from those; :func:`write_shards` does the same into TFRecord files:

1. read every class file once (a tqdm bar over the files), send each drawing to a random
   shard of its split (split by key_id, as in ``make_dataset``);
2. load each shard (1/K of the data) into memory, shuffle it, and write
   ``<split>-<i>-of-<K>.tfrecord`` (a tqdm bar over the shards).

``make_dataset(out_dir, split=...)`` then reads the shards with ``auto_shard_policy =
FILE``: each worker of a multi-worker job reads its own files, so write at least as many
shards as there will be workers. Each record holds ``drawing`` (strokes packed by
:func:`utils.quickdraw.pipeline.pack_strokes`), ``label`` and ``key_id``.
Used in notebook 06 and ``benchmarks/bench_pipeline.py``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from utils.quickdraw.formats import ReadReport
from utils.quickdraw.labels import LabelMap
from utils.quickdraw.pipeline import _resolve, iter_examples, pack_strokes, resolve_labels, split_of


def shard_name(split: str, index: int, num_shards: int) -> str:
    """``train-00003-of-00008.tfrecord``."""
    return f"{split}-{index:05d}-of-{num_shards:05d}.tfrecord"


def _example(packed: bytes, label: int, key_id: int) -> bytes:
    import tensorflow as tf

    feature = {
        "drawing": tf.train.Feature(bytes_list=tf.train.BytesList(value=[packed])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
        "key_id": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(key_id)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


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
) -> dict[str, Any]:
    """Shuffle ``source`` once into ``num_shards`` TFRecord files per split under ``out_dir``.

    Returns the manifest also written to ``out_dir/manifest.json`` (shard files and
    counts per split); ``labels.json`` is written beside the shards. Deterministic for a
    given ``seed``. ``progress=False`` hides the tqdm bars. Used in notebook 06.
    """
    import tensorflow as tf
    from tqdm.auto import tqdm

    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    kind, files, _ = _resolve(source, fmt)
    if kind != "csv_ndjson":
        raise ValueError(f"write_shards reads .csv/.ndjson class files, not {kind}")
    labels = resolve_labels(source, labels, fmt)
    out = Path(out_dir)
    tmp = out / ".unshuffled"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    splits = ("train", "val")
    counts = {s: [0] * num_shards for s in splits}
    writers = {
        (s, i): tf.io.TFRecordWriter(str(tmp / shard_name(s, i, num_shards)))
        for s in splits
        for i in range(num_shards)
    }
    try:
        for path in tqdm(files, desc="read classes", unit="file", disable=not progress):
            rows = iter_examples(
                [path],
                split="all",
                labels=labels,
                limit_per_class=limit_per_class,
                recognized_only=recognized_only,
                strict=strict,
                report=report,
            )
            for strokes, label, key_id in rows:
                s = split_of(key_id, val_fraction, split_seed)
                i = int(rng.integers(num_shards))
                writers[s, i].write(_example(pack_strokes(strokes), label, key_id))
                counts[s][i] += 1
    finally:
        for w in writers.values():
            w.close()
    written: dict[str, list[str]] = {s: [] for s in splits}
    for s, i in tqdm(list(writers), desc="shuffle shards", unit="shard", disable=not progress):
        records = [r.numpy() for r in tf.data.TFRecordDataset(str(tmp / shard_name(s, i, num_shards)))]
        order = rng.permutation(len(records))
        name = shard_name(s, i, num_shards)
        with tf.io.TFRecordWriter(str(out / name)) as w:
            for j in order:
                w.write(records[j])
        written[s].append(name)
    shutil.rmtree(tmp, ignore_errors=True)
    labels.save(out / "labels.json")
    manifest = {
        "num_shards": num_shards,
        "val_fraction": val_fraction,
        "split_seed": split_seed,
        "seed": seed,
        "files": written,
        "counts": {s: sum(c) for s, c in counts.items()},
        "counts_per_shard": counts,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
