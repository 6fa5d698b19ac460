"""The course's models: one small-CNN builder and the capstone's doodle classifiers.

All take ``(size, size, channels)`` images with values in [0, 1] (what
``quickdraw.make_dataset`` yields; divide ``qd.render`` output by 255) and return
class **logits**, so train them with ``SparseCategoricalCrossentropy(from_logits=True)``.

- :func:`build_cnn`: the small CNN of notebooks 04, 05 and 07 (and, with batch
  normalisation and global pooling, the capstone's ``"compact"`` model). ``keras_module``
  picks the Keras: Keras 3 by default, ``tf_keras`` in legacy-Keras workers, ``tf.keras``
  (Keras 2) in the Horovod environment of notebook 07 (TensorFlow 2.12).
- :func:`build_model` (notebook 06, ``scripts/train_quickdraw.py``): ``"mobilenet"`` is
  ``keras.applications.MobileNet(weights=None, ...)``, the architecture of the public Kaggle
  "Greyscale MobileNet" kernel (64×64, 1 channel, MAP@3 0.892 on the leaderboard with all
  340 classes; ``alpha`` thins every layer for a CPU); ``"compact"`` is :func:`build_cnn`
  with four batch-normalised conv blocks and global pooling, for smoke runs and CPUs.

Keras is imported inside the functions.
"""

from __future__ import annotations

from typing import Any

MODEL_KINDS = ("mobilenet", "compact")


def build_cnn(
    num_classes: int,
    image_size: int = 28,
    channels: int = 1,
    *,
    filters: tuple[int, ...] = (16, 32),
    dense_units: int = 64,
    batch_norm: bool = False,
    global_pool: bool = False,
    dropout: float = 0.0,
    bn_momentum: float = 0.9,
    keras_module: Any = None,
    name: str = "doodle_cnn",
) -> Any:
    """A small CNN that outputs class **logits** (uncompiled).

    One block per entry of ``filters``: a 3×3 convolution (then batch normalisation when
    ``batch_norm``) and ReLU, then a 2×2 max-pool (the last block is pooled globally instead
    when ``global_pool``); then a ReLU dense layer of ``dense_units`` (0: none), optional
    dropout and the logits. The defaults (106 k weights at 28×28, seconds an epoch on a CPU)
    have no batch normalisation and no dropout, so one step on N replicas computes exactly
    what one step on one device does — the checks of notebooks 04, 05 and 07 rely on it.
    ``keras_module`` is the Keras to build with (see the module docstring).
    Used in notebooks 04, 05, 06 (``build_model("compact")``) and 07 and their worker programs.
    """
    if num_classes < 2:
        raise ValueError(f"need at least 2 classes, got {num_classes}")
    pools = len(filters) - (1 if global_pool else 0)
    if not filters or image_size < max(12, 2 ** (pools + 1)):
        raise ValueError(f"image_size {image_size} is too small for {pools} 2×2 poolings")
    if keras_module is None:
        import keras as keras_module
    layers = keras_module.layers
    stack: list[Any] = [keras_module.Input((image_size, image_size, channels))]
    for i, width in enumerate(filters, start=1):
        if batch_norm:
            stack += [
                layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"conv{i}"),
                layers.BatchNormalization(momentum=bn_momentum, name=f"bn{i}"),
                layers.ReLU(name=f"relu{i}"),
            ]
        else:
            stack.append(layers.Conv2D(width, 3, activation="relu", padding="same", name=f"conv{i}"))
        if global_pool and i == len(filters):
            stack.append(layers.GlobalAveragePooling2D(name="gap"))
        else:
            stack.append(layers.MaxPooling2D(name=f"pool{i}"))
    if not global_pool:
        stack.append(layers.Flatten(name="flatten"))
    if dense_units:
        stack.append(layers.Dense(dense_units, activation="relu", name="dense"))
    if dropout:
        stack.append(layers.Dropout(dropout, name="dropout"))
    stack.append(layers.Dense(num_classes, name="logits"))
    return keras_module.Sequential(stack, name=name)


def build_model(
    kind: str,
    num_classes: int,
    image_size: int = 64,
    channels: int = 1,
    *,
    alpha: float = 1.0,
    dropout: float = 0.2,
    bn_momentum: float = 0.9,
    name: str | None = None,
) -> Any:
    """Build an uncompiled Keras doodle classifier that outputs logits.

    ``kind`` is ``"mobilenet"`` (needs ``image_size >= 32``) or ``"compact"``.
    ``bn_momentum``: the batch-norm moving averages' momentum. Keras' default 0.99 needs
    several hundred steps before inference-mode predictions are any good; 0.9 suits the
    short runs of a CPU course (use 0.99 for long GPU runs).
    Used in notebook 06 and ``scripts/train_quickdraw.py``.
    """
    if kind not in MODEL_KINDS:
        raise ValueError(f"model kind {kind!r}: choose one of {MODEL_KINDS}")
    if num_classes < 2:
        raise ValueError(f"need at least 2 classes, got {num_classes}")
    if image_size < (32 if kind == "mobilenet" else 16):
        raise ValueError(f"image_size {image_size} is too small for {kind!r}")
    if kind == "compact":
        return build_cnn(
            num_classes,
            image_size,
            channels,
            filters=(32, 64, 128, 192),
            dense_units=0,
            batch_norm=True,
            global_pool=True,
            dropout=dropout,
            bn_momentum=bn_momentum,
            name=name or "doodle_compact",
        )
    import keras
    from keras import layers

    inputs = keras.Input((image_size, image_size, channels), name="doodle")
    backbone = keras.applications.MobileNet(
        input_shape=(image_size, image_size, channels),
        alpha=alpha,
        include_top=False,
        weights=None,
        pooling="avg",
    )
    x = backbone(inputs)
    if dropout:
        x = layers.Dropout(dropout, name="dropout")(x)
    outputs = layers.Dense(num_classes, name="logits")(x)
    model = keras.Model(inputs, outputs, name=name or f"doodle_{kind}")
    for layer in _all_layers(model):
        if isinstance(layer, layers.BatchNormalization):
            layer.momentum = bn_momentum
    return model


def _all_layers(model: Any) -> list[Any]:
    """Every layer, including those inside nested models (the MobileNet backbone)."""
    out = []
    for layer in model.layers:
        out.append(layer)
        if hasattr(layer, "layers"):
            out.extend(_all_layers(layer))
    return out


def sparse_logits_loss(
    num_classes: int, *, label_smoothing: float = 0.0, reduction: str | None = "sum_over_batch_size"
) -> Any:
    """Cross-entropy of class **logits** against integer labels, with optional label smoothing.

    Keras' ``SparseCategoricalCrossentropy`` has no ``label_smoothing``; this loss one-hots
    the labels and smooths them (targets ``(1 - s) * one_hot + s / num_classes``), so the
    pipelines and sparse metrics stay as they are. ``label_smoothing=0`` returns Keras'
    ``SparseCategoricalCrossentropy(from_logits=True)``. ``reduction="none"`` gives the
    per-example losses of a custom loop (``tf.nn.compute_average_loss``).
    Used in ``scripts/check_sim_to_real.py`` (label smoothing 0.1, issue 19) and notebook 06.
    """
    if num_classes < 2:
        raise ValueError(f"need at least 2 classes, got {num_classes}")
    if not 0 <= label_smoothing < 1:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
    import keras

    if not label_smoothing:
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)

    class SmoothedSparseCrossentropy(keras.losses.Loss):
        def call(self, y_true: Any, logits: Any) -> Any:
            labels = keras.ops.cast(keras.ops.reshape(y_true, (-1,)), "int32")
            targets = keras.ops.one_hot(labels, num_classes, dtype=logits.dtype)
            return keras.losses.categorical_crossentropy(
                targets, logits, from_logits=True, label_smoothing=label_smoothing
            )

    return SmoothedSparseCrossentropy(reduction=reduction, name="smoothed_sparse_crossentropy")
