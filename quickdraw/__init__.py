"""Quick, Draw! data for the capstone (notebooks 04-08): real formats, built-in doodles, tf.data.

Layers, each importing only those before it: ``formats`` (the files) and ``render`` (strokes to
images) → the sources (``synthetic`` doodles, the shipped ``real`` test set, ``download``) →
``pipeline`` (``make_dataset``; TensorFlow only when called) → ``shards`` (a one-time shuffle
into TFRecord files) and ``arrays`` (a split rendered once into NumPy arrays)::

    import quickdraw as qd
    path = qd.ensure_builtin_data("smoke")            # Kaggle layout under data/builtin/
    train = qd.make_dataset(path, split="train", image_size=32, batch_size=64)
    steps = qd.count_examples(path, split="train") // 64
    x = qd.doodle_arrays("smoke", "train").x          # (N, 28, 28, 1) float32, cached
"""

from quickdraw.arrays import doodle_arrays
from quickdraw.augment import augment_strokes
from quickdraw.formats import (
    ReadReport,
    find_class_files,
    normalise_to_frame,
    parse_points_batch,
    read_kaggle_csv,
    read_ndjson,
    read_npy_bitmaps,
)
from quickdraw.labels import LabelMap, google_name
from quickdraw.pipeline import count_examples, iter_examples, make_dataset, pack_strokes, resolve_labels
from quickdraw.real import RealDataError, load_real_test, read_real_test, real_test_dir, verify_real_test_set
from quickdraw.render import render, render_batch
from quickdraw.shards import ensure_shards, write_shards
from quickdraw.synthetic import CLASSES as BUILTIN_CLASSES
from quickdraw.synthetic import ensure_builtin_data, generate_builtin, load_arrays

__all__ = [
    "BUILTIN_CLASSES",
    "KAGGLE_INSTRUCTIONS",
    "LabelMap",
    "ReadReport",
    "RealDataError",
    "augment_strokes",
    "count_examples",
    "doodle_arrays",
    "download_google",
    "ensure_builtin_data",
    "ensure_shards",
    "find_class_files",
    "generate_builtin",
    "google_name",
    "iter_examples",
    "load_arrays",
    "load_real_test",
    "make_dataset",
    "normalise_to_frame",
    "pack_strokes",
    "parse_points_batch",
    "read_kaggle_csv",
    "read_ndjson",
    "read_npy_bitmaps",
    "read_real_test",
    "real_test_dir",
    "render",
    "render_batch",
    "resolve_labels",
    "verify_real_test_set",
    "write_shards",
]


def __getattr__(name: str) -> object:
    # loaded on first use: ``python -m quickdraw.download`` must not find its module imported
    if name in ("KAGGLE_INSTRUCTIONS", "download_google"):
        from quickdraw import download

        return getattr(download, name)
    raise AttributeError(f"module 'quickdraw' has no attribute {name!r}")
