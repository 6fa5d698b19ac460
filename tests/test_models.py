"""Tests for utils.models: the one small-CNN builder and the capstone's classifiers."""

from __future__ import annotations

import textwrap

import pytest

from utils.models import build_cnn, build_model


@pytest.mark.parametrize(
    ("kind", "classes", "size"),
    [("nope", 10, 64), ("compact", 1, 64), ("mobilenet", 10, 28), ("compact", 10, 8)],
)
def test_bad_arguments_fail_before_keras(kind: str, classes: int, size: int) -> None:
    with pytest.raises(ValueError):
        build_model(kind, classes, size)


@pytest.mark.slow
def test_models_output_logits_and_take_the_momentum() -> None:
    import keras
    import numpy as np

    compact = build_model("compact", 5, 32)
    mobilenet = build_model("mobilenet", 7, 32, alpha=0.25, bn_momentum=0.8)
    assert compact.output_shape == (None, 5) and mobilenet.output_shape == (None, 7)
    assert compact.layers[-1].get_config()["activation"] == "linear"  # logits
    out = compact(np.zeros((2, 32, 32, 1), "float32"), training=False)
    assert tuple(out.shape) == (2, 5)
    backbone = next(layer for layer in mobilenet.layers if isinstance(layer, keras.Model))
    momenta = {
        layer.momentum for layer in backbone.layers if isinstance(layer, keras.layers.BatchNormalization)
    }
    assert momenta == {0.8}
    rgb = build_model("compact", 3, 24, channels=3)
    assert rgb.input_shape == (None, 24, 24, 3)


@pytest.mark.slow
def test_build_cnn_keras3_and_tf_keras() -> None:
    # Keras 3 and tf-keras in a child process: importing both is slow and sets global state.
    from infra.process import run_python

    result = run_python(
        textwrap.dedent(
            """
            import tf_keras
            from utils.models import build_cnn
            m3 = build_cnn(12, 28)
            m2 = build_cnn(5, 32, keras_module=tf_keras)
            compact = build_cnn(4, 24, filters=(8, 16, 32), dense_units=0, batch_norm=True, global_pool=True,
                                keras_module=tf_keras)
            print(m3.output_shape, m3.count_params(), m2.output_shape, compact.output_shape,
                  type(m2).__module__.split('.')[0])
            """
        ),
        timeout=120,
    )
    assert result.ok, result.tail()
    assert result.stdout.split()[-1] == "tf_keras"
    assert "(None, 12)" in result.stdout and "(None, 5)" in result.stdout and "(None, 4)" in result.stdout
    # conv 3×3×1→16, conv 3×3×16→32, dense 7·7·32→64, logits 64→12 (weights + biases)
    expected = (9 * 1 + 1) * 16 + (9 * 16 + 1) * 32 + (7 * 7 * 32 + 1) * 64 + (64 + 1) * 12
    assert f" {expected} " in result.stdout, result.stdout
    with pytest.raises(ValueError):
        build_cnn(1)
    with pytest.raises(ValueError):
        build_cnn(3, image_size=8)


@pytest.mark.slow
def test_sparse_logits_loss_smooths_against_a_numpy_computation() -> None:
    import keras
    import numpy as np

    from utils.models import sparse_logits_loss

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 4)).astype("float32") * 3
    labels = np.array([0, 3, 1, 1, 2, 0], "int32")
    log_p = logits - logits.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    targets = np.eye(4)[labels] * 0.8 + 0.2 / 4
    want = -(targets * log_p).sum(1)  # per example, by hand
    per_example = sparse_logits_loss(4, label_smoothing=0.2, reduction="none")(labels, logits)
    np.testing.assert_allclose(np.asarray(per_example), want, rtol=1e-5)
    mean = float(sparse_logits_loss(4, label_smoothing=0.2)(labels, logits))
    assert abs(mean - want.mean()) < 1e-5
    # no smoothing: Keras' own sparse loss, which is the hand computation with one-hot targets
    plain = sparse_logits_loss(4)
    assert isinstance(plain, keras.losses.SparseCategoricalCrossentropy)
    np.testing.assert_allclose(float(plain(labels, logits)), -log_p[np.arange(6), labels].mean(), rtol=1e-5)
    assert abs(mean - float(plain(labels, logits))) > 0.01  # smoothing changes the loss
    with pytest.raises(ValueError, match="label_smoothing"):
        sparse_logits_loss(4, label_smoothing=1.0)
