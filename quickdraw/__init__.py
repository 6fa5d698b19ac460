"""Quick, Draw! data layer: real formats, a built-in doodle set, a fast renderer, tf.data.

Public API (everything importable from ``quickdraw``; TensorFlow is imported only
inside :func:`make_dataset` and the shard writer, and nothing needs NumPy 2 or Keras 3):

Built-in data (the default; no download)::

    import quickdraw as qd
    path = qd.ensure_builtin_data(utils.choose(smoke="smoke", full="full"))
    # -> data/builtin/<variant>/ in Kaggle layout: train_simplified/<word>.csv,
    #    test_simplified.csv, test_solution.csv, labels.json, manifest.json
    qd.BUILTIN_CLASSES       # the 28 class names (Google's), in label order
    x, y, names = qd.load_arrays(n, image_size=28, seed=0)  # NumPy, no files, no TF

The real test set shipped in ``data/real/`` (Google's drawings of the same classes, CC BY 4.0)::

    x, y, names = qd.load_real_test(image_size=32)   # 25 real drawings per built-in class
    qd.real_test_dir()                               # data/real/simplified (Google ndjson)

A split rendered once into NumPy arrays, cached under ``build/cache/`` (notebooks 04, 05, 08, 11)::

    train = qd.doodle_arrays("smoke", "train")   # train.x (N, 28, 28, 1) float32, train.y, train.class_names

Labels::

    labels = qd.resolve_labels(path)   # labels.json, else the sorted class-file names
    labels.index("smiley_face") == labels.index("smiley face")
    labels[i], labels.kaggle(i); labels.save(model_dir); qd.LabelMap.load(model_dir)

tf.data (batched ``(float32 images (B, H, W, C) in [0, 1], int32 labels)``)::

    train = qd.make_dataset(path, split="train", image_size=32, batch_size=64)
    val = qd.make_dataset(path, split="val", image_size=32, batch_size=64)
    steps = qd.count_examples(path, split="train") // 64
    # options: encoding="plain"|"order"|"time"|"rgb", repeat=, drop_remainder=,
    # val_fraction=0.1, limit_per_class=, strict=, report=qd.ReadReport(),
    # input_context= (distribute_datasets_from_function), with_key_id=
    # source can also be Google simplified/raw/numpy_bitmap dirs, TFRecord shards
    # (qd.write_shards), test_simplified.csv or a list of files.

One-time shuffle into TFRecord shards (FILE autoshard across workers)::

    qd.write_shards(path, "data/shards/smoke", num_shards=8)   # tqdm progress bars
    qd.ensure_shards(path, "data/shards/smoke", num_shards=8)  # the same, once: reused while the manifest matches
    train = qd.make_dataset("data/shards/smoke", split="train", image_size=32)

Real data (never downloaded unless you call this; see quickdraw/README.md)::

    qd.download_google(["cat", "The Eiffel Tower"], "data/quickdraw", limit_per_class=1000)
    train = qd.make_dataset("data/quickdraw/simplified", split="train")
    print(qd.KAGGLE_INSTRUCTIONS)        # Kaggle's train_simplified/ + test_simplified.csv

Reading and rendering without TensorFlow::

    for d in qd.read_kaggle_csv(file):  # also read_ndjson, read_npy_bitmaps
        d.word, d.key_id, d.strokes       # strokes: float32 (n, 2) or (n, 3) arrays
    img = qd.render(d.strokes, 28)        # uint8 (28, 28, 1), like Google's bitmaps
    pts, ends = qd.parse_points(json_text)  # fast path: one array a drawing
    img = qd.render_points(pts, ends, 64, encoding="order")
    batch = qd.parse_points_batch(json_texts)  # many at once, same results and errors
    imgs = qd.render_points_batch([p for p, _ in batch], [e for _, e in batch], 64)
    qd.split_of(key_id)                   # "train" or "val"

Modules: :mod:`~quickdraw.labels`, :mod:`~quickdraw.formats`,
:mod:`~quickdraw.synthetic` (templates in :mod:`~quickdraw.shapes`),
:mod:`~quickdraw.real`, :mod:`~quickdraw.render`,
:mod:`~quickdraw.pipeline`, :mod:`~quickdraw.shards`,
:mod:`~quickdraw.download`. Measurements against the real data are in
``quickdraw/README.md``. Used in notebooks 04, 05, 06 and 07.
"""

from quickdraw.arrays import DoodleArrays, doodle_arrays
from quickdraw.augment import augment_strokes
from quickdraw.formats import (
    Drawing,
    QuickDrawFormatError,
    ReadReport,
    find_class_files,
    normalise_raw,
    normalise_to_frame,
    parse_points,
    parse_points_batch,
    parse_strokes,
    read_kaggle_csv,
    read_ndjson,
    read_npy_bitmaps,
    write_kaggle_csv,
    write_ndjson,
)
from quickdraw.labels import LabelMap, UnknownClassError, google_categories, google_name, kaggle_name
from quickdraw.pipeline import (
    PipelineOptions,
    count_examples,
    iter_examples,
    make_dataset,
    pack_strokes,
    resolve_labels,
    split_of,
    unpack_strokes,
)
from quickdraw.real import (
    RealDataError,
    load_real_test,
    read_real_test,
    real_test_dir,
    verify_real_test_set,
)
from quickdraw.render import default_line_width, render, render_batch, render_points
from quickdraw.shards import ensure_shards, write_shards
from quickdraw.synthetic import CLASSES as BUILTIN_CLASSES
from quickdraw.synthetic import builtin_dir, ensure_builtin_data, generate_builtin, load_arrays

__all__ = [
    "BUILTIN_CLASSES",
    "DoodleArrays",
    "doodle_arrays",
    "KAGGLE_INSTRUCTIONS",
    "Drawing",
    "augment_strokes",
    "normalise_to_frame",
    "LabelMap",
    "QuickDrawFormatError",
    "ReadReport",
    "RealDataError",
    "UnknownClassError",
    "builtin_dir",
    "count_examples",
    "default_line_width",
    "download_google",
    "ensure_builtin_data",
    "find_class_files",
    "generate_builtin",
    "google_categories",
    "google_name",
    "google_url",
    "iter_examples",
    "kaggle_name",
    "load_arrays",
    "load_real_test",
    "make_dataset",
    "PipelineOptions",
    "normalise_raw",
    "pack_strokes",
    "parse_points",
    "parse_points_batch",
    "parse_strokes",
    "read_kaggle_csv",
    "read_ndjson",
    "read_npy_bitmaps",
    "read_real_test",
    "real_test_dir",
    "render",
    "render_batch",
    "render_points",
    "resolve_labels",
    "split_of",
    "unpack_strokes",
    "verify_real_test_set",
    "write_kaggle_csv",
    "write_ndjson",
    "write_shards",
    "ensure_shards",
]

_LAZY = {"KAGGLE_INSTRUCTIONS", "download_google", "google_url"}


def __getattr__(name: str) -> object:
    # the download helpers load on first use, so that ``python -m quickdraw.download``
    # does not import its own module twice
    if name in _LAZY:
        from quickdraw import download

        return getattr(download, name)
    raise AttributeError(f"module 'quickdraw' has no attribute {name!r}")
