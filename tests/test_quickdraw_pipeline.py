"""quickdraw.pipeline and shards: split, packing, counts (no TF), and tf.data specs.

The tf.data tests import TensorFlow in this process (no device configuration is needed)
and are marked slow.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

from quickdraw.formats import ReadReport, read_kaggle_csv
from quickdraw.labels import LabelMap
from quickdraw.pipeline import (
    count_examples,
    iter_examples,
    make_dataset,
    pack_strokes,
    resolve_labels,
    split_of,
    unpack_strokes,
)
from quickdraw.synthetic import CLASSES, generate_builtin

FIX = Path(__file__).parent / "fixtures" / "quickdraw"
KAGGLE = FIX / "kaggle"
NAMES = ["circle", "smiley face", "square", "triangle"]


def test_split_is_a_fixed_function_of_key_id() -> None:
    keys = np.random.default_rng(0).integers(4 * 10**15, 7 * 10**15, size=20000)
    val = [split_of(int(k), 0.1) == "val" for k in keys]
    assert 0.09 < np.mean(val) < 0.11
    assert [split_of(int(k), 0.1) for k in keys[:50]] == [split_of(int(k), 0.1) for k in keys[:50]]
    other = [split_of(int(k), 0.1, seed=1) == "val" for k in keys]
    assert val != other  # split_seed gives another split
    small = [split_of(int(k), 0.05) == "val" for k in keys]
    assert all(v for s, v in zip(small, val, strict=True) if s)  # 5% val is inside 10% val


def test_pack_unpack_round_trip() -> None:
    a = [np.array([[1, 2], [3, 4], [5, 6]], np.float32), np.array([[7, 8]], np.float32)]
    b = unpack_strokes(pack_strokes(a))
    assert len(b) == 2 and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    t = [np.array([[1, 2, 0], [3, 4, 10]], np.float32), np.array([[7, 8, 50]], np.float32)]
    u = unpack_strokes(pack_strokes(t))
    assert u[0].shape == (2, 3) and np.array_equal(u[1], t[1])


def test_iter_and_count_examples(tmp_path) -> None:
    import shutil

    kaggle = shutil.copytree(
        KAGGLE, tmp_path / "kaggle"
    )  # count_examples writes its manifest beside the data
    report = ReadReport()
    rows = list(iter_examples(kaggle, split="all", report=report))
    assert len(rows) == 6 + 5 + 5 + 4 and report.skipped == 7
    assert resolve_labels(kaggle) == LabelMap(NAMES)
    n_train, n_val = count_examples(kaggle, split="train"), count_examples(kaggle, split="val")
    assert n_train + n_val == 20
    assert count_examples(kaggle, split="all", limit_per_class=2) == 8
    with pytest.raises(ValueError, match="split"):
        list(iter_examples(kaggle, split="test"))
    with pytest.raises(Exception, match="triangle.csv:6: malformed JSON"):
        count_examples(kaggle, split="all", strict=True)


@pytest.fixture(scope="module")
def builtin(tmp_path_factory) -> Path:
    return generate_builtin(tmp_path_factory.mktemp("qd") / "b", per_class=40, test_per_class=3)


pytestmark_tf = pytest.mark.slow


def _collect(ds):
    xs, ys, ks = [], [], []
    for batch in ds:
        xs.append(batch[0].numpy())
        ys.append(batch[1].numpy())
        if len(batch) == 3:
            ks.append(batch[2].numpy())
    return xs, ys, ks


@pytestmark_tf
def test_make_dataset_specs_counts_and_split(builtin: Path) -> None:
    import tensorflow as tf

    from quickdraw.pipeline import make_dataset

    ds = make_dataset(builtin, split="train", image_size=32, batch_size=16, with_key_id=True)
    img, lab, key = ds.element_spec
    assert img.shape.as_list() == [None, 32, 32, 1] and img.dtype == tf.float32
    assert lab.dtype == tf.int32 and key.dtype == tf.int64
    assert lab.shape.as_list() == [None] and key.shape.as_list() == [None]
    xs, ys, ks = _collect(ds)
    n_train = count_examples(builtin, split="train")
    assert sum(len(y) for y in ys) == n_train and len(xs) == -(-n_train // 16)
    assert all(0 <= x.min() and x.max() <= 1 for x in xs) and max(x.max() for x in xs) == 1.0
    train_keys = set(np.concatenate(ks).tolist())
    _, yv, kv = _collect(make_dataset(builtin, split="val", image_size=32, batch_size=16, with_key_id=True))
    val_keys = set(np.concatenate(kv).tolist())
    assert not train_keys & val_keys and len(val_keys) == count_examples(builtin, split="val") > 0
    assert len(train_keys) + len(val_keys) == len(CLASSES) * 40
    first = np.concatenate(ys)[:12]
    assert len(set(first.tolist())) >= 6  # classes interleaved from the start


@pytestmark_tf
def test_make_dataset_options(builtin: Path) -> None:
    import tensorflow as tf

    from quickdraw.pipeline import make_dataset

    ds = make_dataset(
        builtin,
        split="val",
        image_size=28,
        batch_size=8,
        drop_remainder=True,
        encoding="rgb",
        limit_per_class=10,
    )
    assert ds.element_spec[0].shape.as_list() == [8, 28, 28, 3]
    assert ds.element_spec[1].shape.as_list() == [8]
    n = count_examples(builtin, split="val", limit_per_class=10)
    assert sum(1 for _ in ds) == n // 8
    a = [
        y.numpy().tolist()
        for _, y in make_dataset(builtin, split="train", batch_size=32, image_size=16, seed=3)
    ]
    b = [
        y.numpy().tolist()
        for _, y in make_dataset(builtin, split="train", batch_size=32, image_size=16, seed=3)
    ]
    assert a == b  # seeded shuffle: same order
    opts = ds.options().experimental_distribute.auto_shard_policy
    assert opts == tf.data.experimental.AutoShardPolicy.DATA
    rep = make_dataset(builtin, split="val", image_size=16, batch_size=8, repeat=True)
    assert sum(1 for _ in rep.take(50)) == 50


@pytestmark_tf
def test_make_dataset_augment_redraws_every_pass(builtin: Path, tmp_path) -> None:
    from quickdraw.pipeline import make_dataset
    from quickdraw.shards import write_shards

    args = dict(split="train", image_size=32, batch_size=64, shuffle=False, limit_per_class=10)

    def images_and_labels(ds) -> tuple[np.ndarray, np.ndarray]:
        pairs = [(x.numpy(), y.numpy()) for x, y in ds]
        return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])

    plain, labels = images_and_labels(make_dataset(builtin, **args))
    no_hand = dict(rotation=0, shear=0, aspect=0, drop_stroke=0)
    still, still_labels = images_and_labels(make_dataset(builtin, augment=no_hand, **args))
    augmented = make_dataset(builtin, augment=True, **args)
    first, first_labels = images_and_labels(augmented)
    second, _ = images_and_labels(augmented)
    assert np.array_equal(labels, still_labels) and np.array_equal(labels, first_labels)
    # the control: a hand of zeros only re-normalises drawings that were normalised already
    control = float(np.abs(still - plain).mean())
    assert control < 0.005, control
    # a random hand changes the pictures, and a second pass draws them anew
    assert float(np.abs(first - plain).mean()) > 5 * control + 0.01
    assert float(np.abs(second - first).mean()) > 5 * control + 0.01
    # the same from shards, whose blocks reach the hand as one string each
    write_shards(builtin, tmp_path / "s", num_shards=1, progress=False, limit_per_class=10)
    from_shards = {**args, "limit_per_class": None}
    shard_plain, _ = images_and_labels(make_dataset(tmp_path / "s", **from_shards))
    shard_still, _ = images_and_labels(make_dataset(tmp_path / "s", augment=no_hand, **from_shards))
    shard_redrawn, _ = images_and_labels(make_dataset(tmp_path / "s", augment=True, **from_shards))
    assert float(np.abs(shard_still - shard_plain).mean()) < 0.005
    assert float(np.abs(shard_redrawn - shard_plain).mean()) > 5 * control + 0.01
    with pytest.raises(ValueError, match="bitmaps"):
        make_dataset(FIX / "google" / "numpy_bitmap", split="all", augment=True)
    with pytest.raises(TypeError):
        make_dataset(builtin, augment={"rotate": 5}, **args)  # not a setting of augment_strokes


@pytestmark_tf
def test_make_dataset_bad_rows_and_formats() -> None:
    from quickdraw.pipeline import make_dataset

    report = ReadReport()
    _, ys, _ = _collect(make_dataset(KAGGLE, split="all", image_size=28, batch_size=4, report=report))
    assert sum(len(y) for y in ys) == 20 and report.skipped == 7
    with pytest.raises(Exception, match="triangle.csv:6"):
        _collect(make_dataset(KAGGLE, split="all", image_size=28, batch_size=4, strict=True))
    # Google layouts: simplified, raw (time channel) and bitmaps give the same labels
    simp = _collect(
        make_dataset(
            FIX / "google" / "simplified", split="all", batch_size=64, shuffle=False, labels=LabelMap(NAMES)
        )
    )
    assert sum(len(y) for y in simp[1]) == 20
    raw = _collect(
        make_dataset(
            FIX / "google" / "raw", split="all", batch_size=64, encoding="time", labels=LabelMap(NAMES)
        )
    )
    assert sorted(np.concatenate(raw[1]).tolist()) == [0] * 6 + [2] * 5
    bm = _collect(
        make_dataset(
            FIX / "google" / "numpy_bitmap", split="all", image_size=28, batch_size=64, shuffle=False
        )
    )
    assert bm[0][0].shape == (11, 28, 28, 1) and sorted(np.concatenate(bm[1]).tolist()) == [0] * 6 + [1] * 5
    # the test file: no labels (-1), key_ids for the submission
    xs, ys, ks = _collect(
        make_dataset(KAGGLE / "test_simplified.csv", split="all", batch_size=3, with_key_id=True)
    )
    assert sum(len(y) for y in ys) == 8 and set(np.concatenate(ys).tolist()) == {-1}
    test_keys = [d.key_id for d in read_kaggle_csv(KAGGLE / "test_simplified.csv")]
    assert np.concatenate(ks).tolist() == test_keys  # not shuffled: file order


@pytestmark_tf
def test_input_context_shards_disjointly(builtin: Path) -> None:
    import tensorflow as tf

    from quickdraw.pipeline import make_dataset

    keys = []
    for i in range(2):
        ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=i, num_replicas_in_sync=2)
        _, _, ks = _collect(
            make_dataset(
                builtin, split="val", batch_size=8, image_size=16, with_key_id=True, input_context=ctx
            )
        )
        keys.append(set(np.concatenate(ks).tolist()))
    assert not keys[0] & keys[1] and len(keys[0] | keys[1]) == count_examples(builtin, split="val")


@pytestmark_tf
def test_write_shards_and_read_back(builtin: Path, tmp_path) -> None:
    import tensorflow as tf

    from quickdraw.pipeline import make_dataset
    from quickdraw.shards import write_shards

    m = write_shards(builtin, tmp_path / "s", num_shards=3, progress=False)
    assert len(m["files"]["train"]) == 3 and (tmp_path / "s" / "labels.json").is_file()
    assert m["counts"]["train"] == count_examples(builtin, split="train")
    assert not (tmp_path / "s" / ".unshuffled").exists()
    ds = make_dataset(tmp_path / "s", split="train", batch_size=32, image_size=32, with_key_id=True)
    assert ds.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.FILE
    xs, ys, ks = _collect(ds)
    from_files = set(
        np.concatenate(
            _collect(make_dataset(builtin, split="train", batch_size=64, with_key_id=True))[2]
        ).tolist()
    )
    assert set(np.concatenate(ks).tolist()) == from_files
    assert xs[0].shape[1:] == (32, 32, 1)
    # each of 3 workers reads its own shard files
    ctx = tf.distribute.InputContext(num_input_pipelines=3, input_pipeline_id=1)
    part = _collect(
        make_dataset(tmp_path / "s", split="train", batch_size=64, with_key_id=True, input_context=ctx)
    )
    assert sum(len(k) for k in part[2]) == m["counts_per_shard"]["train"][1]
    assert count_examples(tmp_path / "s", split="val") == m["counts"]["val"]


@pytestmark_tf
def test_multi_worker_autoshard(builtin: Path, tmp_path) -> None:
    """What tf.distribute does to each worker's dataset (the rewrite behind the
    auto_shard_policy option; private API, so skipped if it moves): FILE on shards, DATA
    on the class files, and either way every example goes to exactly one worker."""
    try:
        from tensorflow.python.data.experimental.ops.distribute import _AutoShardDataset
    except ImportError:  # pragma: no cover
        pytest.skip("tf.data's auto-shard rewrite is not importable in this TensorFlow")
    from quickdraw.pipeline import make_dataset
    from quickdraw.shards import write_shards

    write_shards(builtin, tmp_path / "s", num_shards=4, progress=False)
    n_train = count_examples(builtin, split="train")
    for source in (tmp_path / "s", builtin):
        keys = []
        for worker in range(2):
            ds = make_dataset(
                source, split="train", image_size=16, batch_size=8, with_key_id=True, shuffle=False
            )
            keys.append({int(k) for batch in _AutoShardDataset(ds, 2, worker) for k in batch[2].numpy()})
        assert keys[0] and keys[1] and not keys[0] & keys[1]
        assert len(keys[0] | keys[1]) == n_train


def test_counts_are_parsed_once_and_kept_in_a_manifest(tmp_path, monkeypatch) -> None:
    import json
    import shutil

    from quickdraw import pipeline
    from quickdraw.counts import MANIFEST_NAME

    data = shutil.copytree(KAGGLE, tmp_path / "kaggle")
    parsed: list[str] = []
    real_iter_file = pipeline.iter_file

    def counting_iter_file(path, **kwargs):  # noqa: ANN001, ANN202 - a spy on the parser
        parsed.append(Path(path).name)
        return real_iter_file(path, **kwargs)

    monkeypatch.setattr(pipeline, "iter_file", counting_iter_file)
    by_reading = sum(1 for _ in iter_examples(data, split="train"))  # the control: a full read
    parsed.clear()
    n_train = count_examples(data, split="train")
    assert n_train == by_reading and sorted(parsed) == sorted(
        p.name for p in (data / "train_simplified").iterdir()
    )
    parsed.clear()
    n_val = count_examples(data, split="val")
    n_all = count_examples(data, split="all")
    assert parsed == [] and n_train + n_val == n_all == 20  # the other splits came from the manifest
    manifest = json.loads((data / MANIFEST_NAME).read_text())
    assert len(manifest["files"]) == 4
    count_examples(data, split="train", limit_per_class=2)  # other settings: counted once more
    assert len(parsed) == 4
    # a changed file is counted again, the others are not
    parsed.clear()
    f = data / "train_simplified" / "circle.csv"
    f.write_text(f.read_text() + f.read_text().splitlines()[1] + "\n")
    assert count_examples(data, split="all") == 21 and parsed == ["circle.csv"]
    # strict=True reads everything (to raise on bad rows), whatever the manifest says
    with pytest.raises(Exception, match="malformed JSON"):
        count_examples(data, split="all", strict=True)


def test_shard_counts_come_from_the_shard_manifest(tmp_path) -> None:
    import json

    from quickdraw.pipeline import SHARD_FORMAT

    names = {s: [f"{s}-0000{i}-of-00002.tfrecord" for i in range(2)] for s in ("train", "val")}
    for name in names["train"] + names["val"]:
        (tmp_path / name).write_bytes(b"")
    manifest = {"format": SHARD_FORMAT, "files": names, "counts_per_shard": {"train": [4, 3], "val": [2, 0]}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert [count_examples(tmp_path, split=s) for s in ("train", "val", "all")] == [7, 2, 9]  # files not read
    assert count_examples([tmp_path / names["train"][1]], split="train") == 3  # a list of shard files


@pytestmark_tf
def test_write_shards_in_worker_processes_gives_the_same_shards(builtin: Path, tmp_path) -> None:
    from quickdraw.formats import QuickDrawFormatError
    from quickdraw.shards import write_shards

    one = write_shards(builtin, tmp_path / "one", num_shards=2, progress=False, workers=1)
    two = write_shards(builtin, tmp_path / "two", num_shards=2, progress=False, workers=2)
    assert one == two and one["counts"]["train"] == count_examples(builtin, split="train")
    for name in one["files"]["train"] + one["files"]["val"]:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert not (tmp_path / "two" / ".unshuffled").exists()
    # bad rows: reported from the workers, or raised with file and line
    report = ReadReport()
    write_shards(KAGGLE, tmp_path / "bad", num_shards=1, progress=False, workers=2, report=report)
    assert report.skipped == 7 and report.rows_ok == 20
    with pytest.raises(QuickDrawFormatError, match="triangle.csv:6: malformed JSON"):
        write_shards(KAGGLE, tmp_path / "strict", num_shards=1, progress=False, workers=2, strict=True)


@pytestmark_tf
def test_shards_are_class_balanced_and_written_once(tmp_path) -> None:
    """Each shard holds each class's share to within one drawing (read back from the files),
    also for uneven classes; ensure_shards reuses matching shards, rewrites changed ones or
    ones of an older format (which make_dataset and count_examples refuse), and a non-writer
    waits for them (and gives up after its timeout)."""
    import json

    import tensorflow as tf

    from quickdraw.kaggle_scale import write_kaggle_scale
    from quickdraw.shards import ensure_shards

    src = write_kaggle_scale(tmp_path / "src", 1000, classes=["circle", "square", "star"], pool=20)
    manifest, written = ensure_shards(src, tmp_path / "s", num_shards=4, progress=False)
    assert written
    for split in ("train", "val"):
        per_shard = np.zeros((4, 3), int)
        for i, name in enumerate(manifest["files"][split]):
            for rec in tf.data.TFRecordDataset(str(tmp_path / "s" / name)):
                ex = tf.train.Example.FromString(rec.numpy())  # a block of drawings
                for label in ex.features.feature["labels"].int64_list.value:
                    per_shard[i, label] += 1
        totals = per_shard.sum(axis=0)
        assert totals.tolist() == manifest["counts_per_class"][split] and totals[2] > 2 * totals[0]
        assert (np.abs(per_shard - totals / 4) < 1).all(), per_shard  # floor or ceil of the class's share
    again, written = ensure_shards(src, tmp_path / "s", num_shards=4, progress=False)
    assert again == manifest and not written
    changed, written = ensure_shards(src, tmp_path / "s", num_shards=4, val_fraction=0.2, progress=False)
    assert written and changed["val_fraction"] == 0.2
    assert ensure_shards(src, tmp_path / "s", num_shards=4, val_fraction=0.2, write=False)[0] == changed
    with pytest.raises(TimeoutError):
        ensure_shards(src, tmp_path / "s", num_shards=3, write=False, wait_seconds=0.2)
    # shards whose manifest records format 1 (none recorded) or 2: refused by make_dataset and
    # count_examples with the way out, written again by ensure_shards
    for old_format in (1, 2):
        old = {k: v for k, v in changed.items() if k != "format"} | ({"format": 2} if old_format == 2 else {})
        (tmp_path / "s" / "manifest.json").write_text(json.dumps(old))
        with pytest.raises(ValueError, match=f"format {old_format} .*ensure_shards"):
            make_dataset(tmp_path / "s", split="train")
        with pytest.raises(ValueError, match=f"format {old_format} .*ensure_shards"):
            count_examples(tmp_path / "s", split="train")
        again, written = ensure_shards(src, tmp_path / "s", num_shards=4, val_fraction=0.2, progress=False)
        assert written and again == changed
    (tmp_path / "s" / "manifest.json").unlink()
    with pytest.raises(ValueError, match="no manifest"):
        count_examples(tmp_path / "s", split="train")


def test_kaggle_scale_class_sizes_are_uneven_and_exact() -> None:
    from quickdraw.kaggle_scale import class_sizes

    sizes = class_sizes(1_000_000, 28)
    assert sum(sizes) == 1_000_000 and sizes == sorted(sizes)
    assert 2.9 < sizes[-1] / sizes[0] < 3.1
    with pytest.raises(ValueError, match="cannot give"):
        class_sizes(5, 28)


def _examples(batches: tuple[list, list, list]) -> collections.Counter:
    """The multiset of (image bytes, label, key_id) in collected batches (:func:`_collect`)."""
    return collections.Counter(
        (x.tobytes(), int(y), int(k))
        for bx, by, bk in zip(*batches, strict=True)
        for x, y, k in zip(bx, by, bk, strict=True)
    )


@pytestmark_tf
def test_shard_blocks_yield_every_drawing_once_an_epoch(builtin: Path, tmp_path) -> None:
    """Shards of blocks (issue 33): an epoch of make_dataset on them is the multiset of
    (image, label, key_id) of the source's split drawn one drawing at a time (each drawing
    once, the same pixels), in batches of exactly batch_size although blocks of 7 do not
    divide it (the last batch the rest, or dropped); another seed reorders the same
    multiset (its first batch differs), other drawings (the validation split) give another
    (the controls); uint8
    images are the float32 ones unscaled."""
    import tensorflow as tf

    from quickdraw.render import render_packed_batch
    from quickdraw.shards import write_shards

    rows = list(iter_examples(builtin, split="train"))
    want = collections.Counter(
        ((tf.cast(render_packed_batch([pack_strokes(s)], 32, encoding="rgb")[0], tf.float32) * (1.0 / 255.0))
         .numpy().tobytes(), label, key)
        for s, label, key in rows
    )  # fmt: skip
    n = len(rows)
    write_shards(builtin, tmp_path / "s", num_shards=3, progress=False, block_size=7)
    args = dict(batch_size=50, image_size=32, encoding="rgb", with_key_id=True)
    got = _collect(make_dataset(tmp_path / "s", split="train", seed=7, **args))
    assert _examples(got) == want
    assert [len(y) for y in got[1]] == [50] * (n // 50) + [n % 50] and n % 50  # the last: the rest
    reordered = next(iter(make_dataset(tmp_path / "s", split="train", seed=8, **args)))
    assert not np.array_equal(reordered[2].numpy(), got[2][0])  # the control: another seed, another order
    val = _collect(make_dataset(tmp_path / "s", split="val", **args))
    assert _examples(val) and not _examples(val) & want  # the control: other drawings, another multiset
    dropped = make_dataset(tmp_path / "s", split="val", drop_remainder=True, **args)
    assert dropped.element_spec[0].shape[0] == 50 and len(val[1][-1]) < 50
    assert [int(b[1].shape[0]) for b in dropped] == [50] * (sum(map(len, val[1])) // 50)
    # image_dtype="uint8" (what scripts/train_quickdraw.py reads): the same batches, pixels 0-255,
    # which tf.cast * (1/255) turns bit for bit into the float32 images
    xu, yu, ku = _collect(make_dataset(tmp_path / "s", split="val", image_dtype="uint8", **args))
    assert xu[0].dtype == np.uint8 and xu[0].max() == 255
    for f, u in zip(val[0], xu, strict=True):
        assert np.array_equal((tf.cast(u, tf.float32) * (1.0 / 255.0)).numpy().view(np.uint32), f.view(np.uint32))
    assert all(np.array_equal(a, b) for a, b in zip(val[1] + val[2], yu + ku, strict=True))
    with pytest.raises(ValueError, match="image_dtype"):
        make_dataset(tmp_path / "s", image_dtype="float16")


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_several_batches_per_render_call_give_the_same_batches(builtin: Path, tmp_path, drop_remainder) -> None:
    """The render map draws several batches a call and ``rebatch`` cuts them again: the
    batches (images, labels, key_ids, shapes) are exactly those of one batch a call, on the
    class files and on shards, with a partial call at the end."""
    from quickdraw import pipeline
    from quickdraw.shards import write_shards

    write_shards(builtin, tmp_path / "s", num_shards=2, progress=False, block_size=4)
    kwargs = dict(split="train", image_size=16, batch_size=6, with_key_id=True, drop_remainder=drop_remainder)

    def batches(source: Path, per_call: int) -> list[tuple[np.ndarray, ...]]:
        ds = pipeline.make_dataset(source, render_call_drawings=per_call, **kwargs)
        return [tuple(t.numpy() for t in b) for b in ds], ds.element_spec[0].shape

    for source in (tmp_path / "s", builtin):
        one_a_call, one_spec = batches(source, 1)
        several, spec = batches(source, 6 * 7)
        assert len(one_a_call) == len(several) > 7  # more than one call, the last one partial
        assert spec == one_spec == ([6] if drop_remainder else [None]) + [16, 16, 1]
        for a, b in zip(one_a_call, several, strict=True):
            assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_make_dataset_settings_are_pipeline_options() -> None:
    """make_dataset's keywords beyond the everyday ones are PipelineOptions' fields: a
    misspelt one, or a bad image_dtype, fails at once (before TensorFlow builds anything)."""
    from quickdraw.pipeline import PipelineOptions

    assert PipelineOptions(num_parallel_calls=1).num_parallel_calls == 1
    with pytest.raises(TypeError, match="num_parallel_cals"):
        make_dataset(KAGGLE, num_parallel_cals=1)
    with pytest.raises(ValueError, match="image_dtype"):
        make_dataset(KAGGLE, image_dtype="float16")
