"""Tests for scripts/train_quickdraw.py: arguments, a tiny run with resume and submission,
numpy bitmaps, and two localhost workers. Training runs in child processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from infra.process import child_env
from utils.config import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "train_quickdraw.py"
sys.path.insert(0, str(SCRIPT.parent))
import train_quickdraw  # noqa: E402

TINY = ["--model", "compact", "--image-size", "24", "--batch-size", "32", "--no-progress"]


def run_script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=PROJECT_ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from quickdraw import generate_builtin

    classes = ["circle", "square", "triangle", "star"]
    return generate_builtin(tmp_path_factory.mktemp("tiny"), per_class=60, test_per_class=5, classes=classes)


def test_arguments() -> None:
    args = train_quickdraw.parse_args(["--strategy", "mirrored", "--logical-devices", "2"])
    assert (args.strategy, args.logical_devices, args.image_size, args.data) == (
        "mirrored",
        2,
        64,
        "builtin:full",
    )
    for bad in (["--strategy", "horovod"], ["--batch-size", "0"], ["--submission", "x.csv"]):
        with pytest.raises(SystemExit):
            train_quickdraw.parse_args(bad)


def test_render_threads_option() -> None:
    """--render-threads: 0 (autotuned) by default, a count of drawing threads, never negative."""
    assert train_quickdraw.parse_args([]).render_threads == 0
    assert train_quickdraw.parse_args(["--render-threads", "3"]).render_threads == 3
    with pytest.raises(SystemExit):
        train_quickdraw.parse_args(["--render-threads", "-1"])


def test_unit_images_are_the_pipelines_float_images() -> None:
    """The step scales the uint8 batches it reads to exactly the float32 numbers make_dataset's
    float images hold (all 256 values): each the float32 product of x and 1/255, rounded once."""
    x = np.arange(256, dtype=np.uint8).reshape(4, 8, 8, 1)
    got = train_quickdraw.unit_images(x).numpy()
    want = x.astype(np.float32) * np.float32(1.0 / 255.0)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.array_equal(got, x / 255.0)  # the control: float64 division rounds otherwise


def test_help_runs_without_tensorflow() -> None:
    proc = run_script("--help", timeout=60)
    assert "--checkpoint-dir" in proc.stdout and "multiworker" in proc.stdout


@pytest.mark.beside  # make test runs it in the second stream (long)
@pytest.mark.slow
def test_train_resume_and_submit(tiny_data: Path, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    common = ["--data", str(tiny_data), *TINY, "--checkpoint-dir", str(ckpt), "--epochs", "2"]
    # "interrupted" run: 4 steps, a checkpoint every 2
    run_script(
        *common,
        "--max-steps",
        "4",
        "--checkpoint-every",
        "2",
        "--strategy",
        "mirrored",
        "--logical-devices",
        "2",
    )
    first = json.loads((ckpt / "results.json").read_text())
    assert first["steps"] == 4 and first["replicas"] == 2 and first["resumed_from_step"] == 0
    # the same command without the limit resumes at step 4 and finishes both epochs
    proc = run_script(
        *common,
        "--predict",
        str(tiny_data / "test_simplified.csv"),
        "--submission",
        str(tmp_path / "sub.csv"),
    )
    assert "resumed from" in proc.stdout
    res = json.loads((ckpt / "results.json").read_text())
    steps_per_epoch = res["train_examples"] // 32
    assert res["resumed_from_step"] == 4
    assert res["steps"] == 2 * steps_per_epoch
    assert [(h["epoch"], h["complete"]) for h in res["history"]] == [(1, False), (1, True), (2, True)]
    assert res["classes"] == 4 and res["format"] == "strokes" and res["encoding"] == "order"
    for key in ("top1", "top3", "map3"):
        assert 0.0 <= res[key] <= 1.0
    assert res["top1"] <= res["map3"] <= res["top3"]  # always true of MAP@3
    assert res["submission"]["rows"] == 20 and 0.0 <= res["submission"]["map3"] <= 1.0
    assert (tmp_path / "sub.csv").read_text().startswith("key_id,word\n")
    assert {p.name for p in ckpt.iterdir()} >= {"labels.json", "model.keras", "history.json", "checkpoint"}
    # a finished run started again trains no further
    run_script(*common)
    assert json.loads((ckpt / "results.json").read_text())["steps"] == res["steps"]


@pytest.mark.slow
def test_submission_is_checked_against_the_test_file_itself(tiny_data: Path, tmp_path: Path) -> None:
    """A test row the pipeline cannot read (a counted skip) is missing from the submission: the
    check compares with the key ids of the test file read apart, so it fails."""
    import keras

    import quickdraw as qd
    from utils.submission import SubmissionError

    test = tmp_path / "test_simplified.csv"
    good = (tiny_data / "test_simplified.csv").read_text()
    test.write_text(good + '999999999,XX,"[[[0, 1], [0"\n')  # a drawing cut short
    labels = qd.resolve_labels(tiny_data)
    model = keras.Sequential([keras.Input((24, 24, 1)), keras.layers.Flatten(), keras.layers.Dense(len(labels))])
    args = train_quickdraw.parse_args(["--image-size", "24", "--predict", str(test), "--submission", str(tmp_path / "s.csv")])
    with pytest.raises(SubmissionError, match="999999999"):
        train_quickdraw.predict_submission(args, model, labels, "order")
    test.write_text(good)
    assert train_quickdraw.predict_submission(args, model, labels, "order")["rows"] == good.count("\n") - 1


@pytest.mark.beside  # make test runs it in the second stream (long)
@pytest.mark.slow
def test_numpy_bitmaps(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = tmp_path / "numpy_bitmap"
    data.mkdir()
    for word in ("apple", "cat", "The Eiffel Tower"):  # Google's published layout (N, 784)
        np.save(data / f"{word}.npy", rng.integers(0, 256, (80, 784), dtype=np.uint8))
    # 2 replicas and so few validation drawings that they fit in one per-replica batch of
    # 16: the second replica gets an empty batch, which the eval step must survive
    common = ["--strategy", "mirrored", "--logical-devices", "2", "--val-fraction", "0.03"]
    run_script(
        "--data", str(tmp_path), *TINY, *common, "--epochs", "1", "--results", str(tmp_path / "r.json")
    )
    res = json.loads((tmp_path / "r.json").read_text())
    assert (res["format"], res["encoding"], res["classes"]) == ("numpy bitmaps", "plain", 3)
    assert res["train_examples"] + res["val_examples"] == 240
    assert 0 < res["val_examples"] <= 16 and res["replicas"] == 2


@pytest.fixture(scope="module")
def kaggle_scale_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generator of ``make bench`` (1 M rows there), tiny: 3,000 rows of 4 uneven classes."""
    from quickdraw.kaggle_scale import write_kaggle_scale

    return write_kaggle_scale(tmp_path_factory.mktemp("scale") / "kaggle", 3000, pool=50, test_per_class=15,
                              classes=["circle", "square", "triangle", "star"])  # fmt: skip


@pytest.mark.beside  # make test runs it in the second stream (long)
@pytest.mark.slow
def test_two_workers_rehearse_the_real_data_path(kaggle_scale_data: Path, tmp_path: Path) -> None:
    """The default path end to end with 2 workers: Kaggle-layout CSVs -> class-balanced shards
    (written once by the chief; the other worker waits) -> one pipeline per worker ->
    step-based epochs, bounded validation -> training -> a submission checked against the
    test file's own key ids."""
    import csv

    from infra.cluster import run_workers
    from utils.submission import validate_submission

    shards, submission = tmp_path / "shards", tmp_path / "submission.csv"
    args = ["--strategy", "multiworker", "--data", str(kaggle_scale_data), *TINY, "--epochs", "2",
            "--steps-per-epoch", "2", "--val-limit", "64", "--shards", "4", "--shards-dir", str(shards),
            "--predict", str(kaggle_scale_data / "test_simplified.csv"), "--submission", str(submission)]  # fmt: skip
    result = run_workers(
        SCRIPT, num_workers=2, args=[*args, "--checkpoint-dir", str(tmp_path / "mw")], timeout=300
    )
    chief, other = result.reports
    assert chief["chief"] and not other["chief"]
    assert chief["replicas"] == other["replicas"] == 2 and chief["workers"] == 2
    assert chief["input"] == other["input"] == "shards"
    assert chief["shards_written"] and not other["shards_written"]  # written once, by the chief
    assert chief["steps"] == other["steps"] == 4 and chief["steps_per_epoch"] == 2
    assert chief["val_evaluated"] == 64 < chief["val_examples"]  # bounded: 2 global batches of 32
    assert chief["trainable_sum"] == pytest.approx(other["trainable_sum"], rel=1e-6)
    assert chief["map3"] == pytest.approx(other["map3"])  # metrics are summed over workers
    manifest = json.loads((shards / "manifest.json").read_text())
    assert sum(manifest["counts"].values()) == 3000  # every row of the CSVs, once
    assert manifest["counts_per_class"]["train"][0] < manifest["counts_per_class"]["train"][3]  # uneven classes
    # the submission: one row per key id of the test file (read here, apart from the script), 3 names each
    with (kaggle_scale_data / "test_simplified.csv").open(newline="") as f:
        expected = [int(row["key_id"]) for row in csv.DictReader(f)]
    report = validate_submission(submission, ["circle", "square", "triangle", "star"], expected_key_ids=expected)
    assert report.rows == len(expected) == 60 and chief["submission"]["rows"] == 60
    assert not (tmp_path / "mw" / ".workers").exists()
    # every worker saved the model (TensorFlow's multi-worker tutorial): the chief into the
    # checkpoint folder, the other into its scratch folder, deleted since
    assert Path(chief["model_saved_to"]) == (tmp_path / "mw" / "model.keras").resolve()
    assert Path(chief["model_saved_to"]).is_file() and chief["model_bytes"] > 0
    assert ".workers" in Path(other["model_saved_to"]).parts and other["model_bytes"] > 0
    assert not Path(other["model_saved_to"]).exists()


@pytest.mark.slow
@pytest.mark.beside  # make test runs it in the second stream (long)
@pytest.mark.parametrize(
    ("extra", "dtype"),
    [(["--mixed-precision", "bfloat16", "--xla"], "bfloat16"),
     (["--mixed-precision", "float16", "--encoding", "rgb"], "float16")],  # fmt: skip
)
def test_mixed_precision_xla_resnet_and_rgb(tiny_data: Path, tmp_path: Path, extra: list[str], dtype: str) -> None:
    """The switches of notebook 08 and a larger backbone on tiny data: the convolutions compute
    in 16 bits, the loss stays finite (float16 with loss scaling), the model saves and loads."""
    import keras

    ckpt = tmp_path / "ckpt"
    run_script("--data", str(tiny_data), *TINY, "--image-size", "32", "--shards", "2", "--epochs", "1",
               "--max-steps", "3", "--checkpoint-dir", str(ckpt), *extra)  # fmt: skip
    r = json.loads((ckpt / "results.json").read_text())
    assert r["conv_compute_dtype"] == dtype and r["steps"] == 3
    assert np.isfinite(r["val_loss"]) and all(np.isfinite(h["loss"]) for h in r["history"])
    model = keras.models.load_model(ckpt / "model.keras")
    assert model.output_shape == (None, 4)
    if "rgb" in extra:
        assert model.input_shape[-1] == 3  # the 3-channel stroke encoding (order, time, ...)


@pytest.mark.beside  # make test runs it in the second stream (long)
@pytest.mark.slow
def test_resnet50_backbone_learns_a_batch() -> None:
    """--model resnet50 (random initialisation): keras.applications' ResNet-50 with a logits
    head; two Adam steps on a tiny batch lower its loss. In this process: a whole script run
    of ResNet-50 (and saving 94 MB) would take minutes on a CPU. Seeded, with a small learning
    rate: at 1e-3 an unseeded ResNet's loss on 8 images can jump back above where it started
    (CI once saw 2.10, 0.46, 2.82)."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    args = train_quickdraw.parse_args(["--model", "resnet50", "--image-size", "32"])
    model = train_quickdraw.make_model(args, 4, 1)
    assert model.count_params() > 20_000_000 and model.output_shape == (None, 4)  # ResNet-50's 23.5 M weights
    x = tf.random.stateless_uniform((8, 32, 32, 1), seed=(1, 2))
    y = tf.constant([0, 1, 2, 3] * 2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = keras.optimizers.Adam(1e-4)
    losses = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables, strict=True))
        losses.append(float(loss))
    assert losses[-1] < losses[0], losses


def test_pretrained_needs_resnet50_and_rgb() -> None:
    for bad in (["--pretrained"], ["--pretrained", "--model", "resnet50"], ["--tta"], ["--ensemble", "a.keras"]):
        with pytest.raises(SystemExit):
            train_quickdraw.parse_args(bad)
    args = train_quickdraw.parse_args(["--pretrained", "--model", "resnet50", "--encoding", "rgb"])
    assert args.pretrained and args.mixed_precision == "none" and not args.xla


@pytest.mark.slow
def test_tta_and_ensemble_of_saved_models(tiny_data: Path, tmp_path: Path) -> None:
    """--tta --ensemble: the submission holds the top 3 of the averaged probabilities of this
    run's model and a saved one, each on the drawings and their mirror images — recomputed
    here, apart from the script, from the two saved models."""
    import csv

    import keras
    import tensorflow as tf

    import quickdraw as qd
    from quickdraw.labels import kaggle_name

    common = ["--data", str(tiny_data), *TINY, "--shards", "2", "--epochs", "1", "--max-steps", "4"]
    run_script(*common, "--checkpoint-dir", str(tmp_path / "a"), "--seed", "1")
    test = tiny_data / "test_simplified.csv"
    out = tmp_path / "sub.csv"
    run_script(*common, "--checkpoint-dir", str(tmp_path / "b"), "--predict", str(test), "--submission", str(out),
               "--tta", "--ensemble", str(tmp_path / "a" / "model.keras"))  # fmt: skip
    info = json.loads((tmp_path / "b" / "results.json").read_text())["submission"]
    assert info["members"] == 2 and info["tta"] and info["rows"] == 20
    models = [keras.models.load_model(tmp_path / d / "model.keras") for d in ("a", "b")]
    labels = qd.LabelMap.load(tmp_path / "b")
    ds = qd.make_dataset(test, split="all", image_size=24, batch_size=256, encoding="order", labels=labels,
                         shuffle=False, with_key_id=True)  # fmt: skip
    expected = {}
    for images, _, keys in ds:
        probs = sum(tf.nn.softmax(m(v, training=False)).numpy()
                    for m in models for v in (images, tf.image.flip_left_right(images))) / 4  # fmt: skip
        for key, p in zip(keys.numpy(), probs, strict=True):
            expected[int(key)] = [kaggle_name(labels[i]) for i in np.argsort(-p, kind="stable")[:3]]
    with out.open(newline="") as f:
        written = {int(r["key_id"]): r["word"].split(" ") for r in csv.DictReader(f)}
    assert written.keys() == expected.keys()
    assert sum(written[k][0] == expected[k][0] for k in written) >= 19  # top-1 (a near tie may flip one)
