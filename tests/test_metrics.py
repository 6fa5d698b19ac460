"""Tests for utils.metrics: MAP@3 by hand, NumPy vs Keras (Keras in a subprocess)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from utils.metrics import apk, map_at_k, mapk, rank_weights, top_k_accuracy, top_k_indices


@pytest.mark.parametrize(
    ("actual", "predicted", "expected"),
    [
        ("cat", ["cat", "dog", "cow"], 1.0),
        ("cat", ["dog", "cat", "cow"], 1 / 2),
        ("cat", ["dog", "cow", "cat"], 1 / 3),
        ("cat", ["dog", "cow", "pig"], 0.0),
        ("cat", ["dog", "cow", "pig", "cat"], 0.0),  # rank 4 does not count at k=3
        # duplicates: a repeated guess uses up a rank, and only its first position counts
        ("cat", ["dog", "dog", "cat"], 1 / 3),
        ("cat", ["cat", "cat", "cat"], 1.0),
        ("dog", ["cat", "cat", "dog"], 1 / 3),
        # fewer than three guesses
        ("cat", ["cat"], 1.0),
        ("cat", ["dog", "cat"], 1 / 2),
        ("cat", ["dog"], 0.0),
        ("cat", [], 0.0),
    ],
)
def test_apk_hand_worked(actual: str, predicted: list[str], expected: float) -> None:
    assert apk(actual, predicted) == pytest.approx(expected)


def test_mapk_is_the_mean() -> None:
    assert mapk(["cat", "dog"], [["cat"], ["cow", "pig", "dog"]]) == pytest.approx((1 + 1 / 3) / 2)
    assert mapk([1, 2, 3], [[1, 2, 3], [1, 2, 3], [1, 2, 3]]) == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def test_mapk_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        mapk([1, 2], [[1]])
    with pytest.raises(ValueError):
        mapk([], [])
    with pytest.raises(ValueError):
        apk(1, [1], k=0)


def test_top_k_ties_go_to_lower_index() -> None:
    scores = np.array([[0.2, 0.2, 0.2, 0.2], [0.1, 0.5, 0.5, 0.0], [3, 1, 3, 3]])
    assert top_k_indices(scores).tolist() == [[0, 1, 2], [1, 2, 0], [0, 2, 3]]
    # all equal: label 1 sits at rank 2, label 3 falls outside the top 3
    assert map_at_k([1], scores[:1]) == pytest.approx(1 / 2)
    assert map_at_k([3], scores[:1]) == 0.0


def test_map_at_k_from_scores_hand_worked() -> None:
    scores = np.array(
        [
            [0.7, 0.2, 0.1, 0.0],  # label 0 at rank 1 -> 1
            [0.1, 0.6, 0.3, 0.0],  # label 2 at rank 2 -> 1/2
            [0.4, 0.3, 0.2, 0.1],  # label 2 at rank 3 -> 1/3
            [0.4, 0.3, 0.2, 0.1],  # label 3 at rank 4 -> 0
        ]
    )
    labels = [0, 2, 2, 3]
    assert map_at_k(labels, scores) == pytest.approx((1 + 1 / 2 + 1 / 3) / 4)
    assert top_k_accuracy(labels, scores, 1) == pytest.approx(1 / 4)
    assert top_k_accuracy(labels, scores, 3) == pytest.approx(3 / 4)
    # weights: only the first two rows count
    assert map_at_k(labels, scores, sample_weight=[1, 1, 0, 0]) == pytest.approx(3 / 4)
    # fewer than three classes: k shrinks to the number of classes
    assert map_at_k([1, 0], np.array([[0.9, 0.1], [0.9, 0.1]])) == pytest.approx(3 / 4)


def test_map_at_k_matches_apk_on_random_scores() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=(500, 12)).astype(float)  # many ties
    labels = rng.integers(0, 12, size=500)
    lists = top_k_indices(scores).tolist()
    assert map_at_k(labels, scores) == pytest.approx(mapk(labels.tolist(), lists))
    assert rank_weights(3).tolist() == pytest.approx([1, 1 / 2, 1 / 3])


def test_map_at_k_rejects_shape_mismatch() -> None:
    with pytest.raises(ValueError):
        map_at_k([0, 1], np.zeros((3, 4)))
    with pytest.raises(ValueError):
        top_k_indices(np.zeros(4))


def test_keras_metric_not_built_at_import() -> None:
    import utils.metrics as m

    with pytest.raises(AttributeError):
        m.NoSuchThing  # noqa: B018


KERAS_CHECK = """
import json, os
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from utils.metrics import MapAtK, map_at_k

rng = np.random.default_rng(1)
scores = rng.integers(0, 4, size=(96, 10)).astype("float32")  # ties everywhere
labels = rng.integers(0, 10, size=96)
weights = rng.random(96).astype("float32")
out = {"numpy": map_at_k(labels, scores), "numpy_w": map_at_k(labels, scores, sample_weight=weights)}

m = MapAtK()
for i in range(0, 96, 32):  # streaming over batches
    m.update_state(labels[i:i + 32], scores[i:i + 32])
out["keras"] = float(m.result())
m.reset_state()
m.update_state(labels, scores, sample_weight=weights)
out["keras_w"] = float(m.result())
m.reset_state()
m.update_state(keras.utils.to_categorical(labels, 10), scores)
out["keras_onehot"] = float(m.result())
out["config_k"] = MapAtK.from_config(MapAtK(k=2).get_config()).k

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    dm = MapAtK()
ds = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((labels, scores)).batch(20))  # last batch short

@tf.function
def step(batch):
    strategy.run(lambda y, s: dm.update_state(y, s), args=batch)

for b in ds:
    step(b)
out["replicas"] = strategy.num_replicas_in_sync
out["distributed"] = float(dm.result())

model = keras.Sequential([keras.Input((10,)), keras.layers.Identity()])
model.compile(loss="sparse_categorical_crossentropy", metrics=[MapAtK()])
out["evaluate"] = model.evaluate(scores, labels, batch_size=32, verbose=0, return_dict=True)["map_at_3"]
print("RESULT", json.dumps(out))
"""


@pytest.mark.slow
def test_keras_metric_matches_numpy() -> None:
    from infra.process import run_python

    res = run_python(KERAS_CHECK, timeout=240)
    assert res.ok, res.tail(30)
    line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT ") :])
    assert out["replicas"] == 2
    for key in ("keras", "keras_onehot", "distributed", "evaluate"):
        assert out[key] == pytest.approx(out["numpy"], abs=1e-6), key
    assert out["keras_w"] == pytest.approx(out["numpy_w"], abs=1e-6)
    assert out["config_k"] == 2
