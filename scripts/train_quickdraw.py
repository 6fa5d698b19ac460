#!/usr/bin/env python
"""Train a Quick, Draw! doodle classifier from the command line, on one device, several
GPUs (MirroredStrategy) or several machines (MultiWorkerMirroredStrategy).

Examples (from the project root)::

    # the built-in doodles, a compact CNN, 2 logical CPU devices
    python scripts/train_quickdraw.py --model compact --image-size 32 --epochs 2 \\
        --strategy mirrored --logical-devices 2 --checkpoint-dir /tmp/qd

    # real data (Kaggle train_simplified/*.csv or Google simplified|raw/*.ndjson), the
    # default path: the class files shuffled once into class-balanced TFRecord shards
    # (written by one process per core into <data>/tfrecords-64, reused later), each worker
    # reading its own shard files; epochs of 800 steps, 20,000 validation drawings
    python scripts/train_quickdraw.py --data ~/quickdraw --image-size 64 --model mobilenet \\
        --strategy mirrored --batch-size 680 --steps-per-epoch 800 --epochs 16 \\
        --checkpoint-dir ckpt/run1 --predict ~/quickdraw/test_simplified.csv --submission submission.csv

    # the slow, simple alternative: read the CSVs directly (Python parses every row on every
    # read, and under multiworker every worker parses all of them): for a few classes
    python scripts/train_quickdraw.py --data ~/quickdraw --input csv ...

    # several machines: the same command on each, with its own TF_CONFIG (see docs/capstone.md)
    TF_CONFIG='{"cluster": {"worker": ["node1:2222", "node2:2222"]},
                "task": {"type": "worker", "index": 0}}' \\
    python scripts/train_quickdraw.py --strategy multiworker --data /shared/quickdraw ...

The default input path for stroke files (``--input shards``): a manifest with the counts,
written once; the drawings shuffled once into pre-shuffled, class-balanced TFRecord shards
(``quickdraw.ensure_shards``: parsed and validated in one process per core; the chief
writes them, the other workers wait for its manifest); ``FILE`` auto-sharding, one input
pipeline per worker reading only its own shard files; step-based epochs
(``--steps-per-epoch``) and a bounded validation set (``--val-limit``); the submission
checked against the key ids of the test file itself. ``.npy`` bitmaps and shard folders are
read as they are.

One training loop serves every strategy: a custom loop with ``strategy.run`` (Keras 3's
``fit`` fails under MultiWorkerMirroredStrategy, keras-team/keras#20585). ``--batch-size``
is the **global** batch; each replica gets ``batch / replicas``. Checkpoints
(``tf.train.CheckpointManager``) are written at the end of every epoch and every
``--checkpoint-every`` steps; running the same command again resumes from the latest one
(model, optimizer and step). A tqdm bar shows progress on the chief. The chief writes
``results.json`` (the numbers of notebook 06's results table), ``history.json``,
``labels.json`` and ``model.keras`` into the checkpoint directory. Under
MultiWorkerMirroredStrategy every worker writes checkpoints and saves the model, as
TensorFlow's multi-worker tutorials say (saving can involve collective ops): the other
workers into a scratch folder ``.workers/<task>`` that they delete when done.

Used by notebook 06 (also for its multi-worker part, through ``infra.cluster``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

STRATEGIES = ("default", "mirrored", "multiworker")
SMALL_SOURCE_BYTES = 50_000_000  # below this, shards are written in this process


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see ``--help``)."""
    p = argparse.ArgumentParser(
        description="Train a Quick, Draw! doodle classifier with a tf.distribute strategy.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d = p.add_argument_group("data")
    d.add_argument(
        "--data",
        default="builtin:full",
        help="a folder of Kaggle train_simplified/*.csv, Google *.ndjson or *.npy files, "
        "or TFRecord shards; or builtin:smoke / builtin:full for the built-in doodles",
    )
    d.add_argument(
        "--input",
        default="shards",
        choices=["shards", "csv"],
        help="shards: shuffle stroke files once into class-balanced TFRecord shards and train from them "
        "(fast; each worker reads its own files); csv: read the class files directly (slow and simple: "
        "Python parses every row on every read, every worker parses all rows; for a few classes)",
    )
    d.add_argument("--shards", type=int, default=64, help="number of shard files per split (>= workers)")
    d.add_argument("--shards-dir", default=None, help="where the shards go (default: <data>/tfrecords-<shards>)")
    d.add_argument("--shard-workers", type=int, default=None,
                   help="processes writing shards (default: one per core above 50 MB of files, else 1)")
    d.add_argument("--limit-per-class", type=int, default=None, help="use at most N drawings per class")
    d.add_argument("--val-fraction", type=float, default=0.1, help="share of key_ids held out")
    d.add_argument("--val-limit", type=int, default=20_000,
                   help="evaluate on at most about N validation drawings (0: all of them)")
    d.add_argument("--render-threads", type=int, default=0,
                   help="drawing threads per input pipeline (0: tf.data autotunes, the fastest; 1: the least CPU "
                   "per drawing, for several workers sharing a machine's cores: docs/capstone.md)")
    d.add_argument("--image-size", type=int, default=64)
    d.add_argument(
        "--encoding",
        default="auto",
        choices=["auto", "plain", "order", "time", "rgb"],
        help="how strokes become pixels (auto: order for strokes, plain for .npy bitmaps)",
    )
    m = p.add_argument_group("model and training")
    m.add_argument("--model", default="mobilenet", choices=["mobilenet", "compact", "resnet50"],
                   help="resnet50: keras.applications.ResNet50, a larger backbone like the winners' ResNets")
    m.add_argument("--pretrained", action="store_true",
                   help="resnet50 from ImageNet weights (downloaded by Keras; needs --encoding rgb); "
                   "default: random initialisation")
    m.add_argument("--alpha", type=float, default=1.0, help="MobileNet width multiplier")
    m.add_argument("--bn-momentum", type=float, default=0.9, help="batch-norm momentum (0.99 for long runs)")
    m.add_argument("--epochs", type=int, default=10)
    m.add_argument("--steps-per-epoch", type=int, default=None,
                   help="steps per epoch (default: one pass over the training drawings)")
    m.add_argument("--batch-size", type=int, default=256, help="global batch size (all replicas)")
    m.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (Adam, warm-up + cosine)")
    m.add_argument("--warmup-epochs", type=float, default=0.5)
    m.add_argument("--seed", type=int, default=42)
    m.add_argument("--mixed-precision", default="none", choices=["none", "float16", "bfloat16"],
                   help="compute in 16 bits, variables in 32 (float16: GPUs, with loss scaling; bfloat16: CPUs, TPUs)")
    m.add_argument("--xla", action="store_true", help="compile each replica's forward and backward pass with XLA")
    s = p.add_argument_group("distribution")
    s.add_argument("--strategy", default="default", choices=STRATEGIES)
    s.add_argument(
        "--logical-devices",
        type=int,
        default=1,
        help="without GPUs: split the CPU into N logical devices (for --strategy mirrored)",
    )
    c = p.add_argument_group("checkpoints and output")
    c.add_argument("--checkpoint-dir", default=None, help="resume from / save to this folder")
    c.add_argument("--checkpoint-every", type=int, default=0, help="also save every N steps (0: per epoch)")
    c.add_argument("--max-steps", type=int, default=None, help="stop after this many steps in all (tests)")
    c.add_argument("--results", default=None, help="results JSON (default: <checkpoint-dir>/results.json)")
    c.add_argument("--predict", default=None, help="a test_simplified.csv to predict after training")
    c.add_argument("--submission", default=None, help="where to write the Kaggle submission CSV")
    c.add_argument("--tta", action="store_true",
                   help="test-time augmentation: average each test drawing's probabilities with its mirror image's")
    c.add_argument("--ensemble", nargs="+", default=[], metavar="MODEL.keras",
                   help="saved models (same classes, size, encoding) whose probabilities are averaged with this one's")
    c.add_argument("--no-progress", action="store_true", help="no tqdm bar (one line per epoch)")
    args = p.parse_args(argv)
    if args.batch_size < 1 or args.epochs < 0 or args.image_size < 16:
        p.error("--batch-size must be >= 1, --epochs >= 0, --image-size >= 16")
    if args.logical_devices < 1:
        p.error("--logical-devices must be >= 1")
    if args.shards < 1 or args.val_limit < 0 or (args.steps_per_epoch is not None and args.steps_per_epoch < 1):
        p.error("--shards and --steps-per-epoch must be >= 1, --val-limit >= 0")
    if args.render_threads < 0:
        p.error("--render-threads must be >= 0 (0: autotuned)")
    if args.submission and not args.predict:
        p.error("--submission needs --predict test_simplified.csv")
    if (args.tta or args.ensemble) and not args.predict:
        p.error("--tta and --ensemble act on --predict test_simplified.csv")
    if args.pretrained and (args.model != "resnet50" or args.encoding != "rgb"):
        p.error("--pretrained needs --model resnet50 and --encoding rgb (ImageNet weights expect 3 channels)")
    return args


def resolve_data(spec: str) -> Path:
    """``builtin:smoke`` / ``builtin:full`` (generated on first use) or a folder/file path."""
    import quickdraw as qd

    if spec.startswith("builtin:"):
        return qd.ensure_builtin_data(spec.split(":", 1)[1])
    path = Path(spec).expanduser()
    if not path.exists():
        raise SystemExit(f"--data {spec}: no such file or folder")
    return path


def is_bitmap_source(path: Path) -> bool:
    """True when ``path`` holds Google ``numpy_bitmap`` ``.npy`` files (no strokes)."""
    import quickdraw as qd

    if path.is_file():
        return path.suffix.lower() == ".npy"
    if any(path.glob("*.tfrecord")):
        return False
    files = qd.find_class_files(path)
    return next(iter(files.values())).suffix.lower() == ".npy"


def make_strategy(name: str, logical_devices: int) -> Any:
    """The ``tf.distribute`` strategy for ``--strategy`` (create it before other TF work)."""
    import tensorflow as tf

    from infra import devices
    from utils.devices import plan_devices, strategy_devices

    if name == "multiworker":
        if "TF_CONFIG" not in os.environ:
            print("warning: TF_CONFIG is not set; MultiWorkerMirroredStrategy runs as one worker")
        worker = devices.configure_worker()  # the devices infra.cluster assigned (none set by hand: AUTO)
        options = tf.distribute.experimental.CommunicationOptions(implementation=worker.collective)
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    plan = devices.apply_plan(plan_devices(devices.detect_gpus(), logical_devices))
    print(f"replicas: {plan.describe()}")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(strategy_devices())
    return tf.distribute.get_strategy()


def task_info(strategy: Any) -> tuple[bool, str, int]:
    """(is_chief, task_type, task_id) of this process; single-process runs are chief."""
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None) if resolver else None
    task_id = getattr(resolver, "task_id", 0) if resolver else 0
    if task_type is None:
        return True, "worker", 0
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0 and not has_chief)
    return is_chief, task_type, int(task_id or 0)


@dataclass
class DataPlan:
    """What to read and how many steps: the data (shards by default), its encoding and labels,
    the split sizes, the global batch (``--batch-size``) over the strategy's replicas, and the
    validation batches each evaluation reads (``--val-limit``)."""

    data: Path
    bitmaps: bool
    encoding: str
    labels: Any
    n_train: int
    n_val: int
    replicas: int
    global_batch: int
    steps_per_epoch: int
    total_steps: int
    val_steps: int | None = None  # None: every validation drawing
    source: Path | None = None  # the files the shards were written from
    shards_written: bool = False

    @property
    def channels(self) -> int:
        return 3 if self.encoding == "rgb" else 1

    @property
    def n_val_evaluated(self) -> int:
        return self.n_val if self.val_steps is None else min(self.n_val, self.val_steps * self.global_batch)


def shard_source(args: argparse.Namespace, data: Path, is_chief: bool, say: Any) -> tuple[Path, bool]:
    """``--input shards`` for stroke files: the shards of ``data`` (written once, by the chief;
    the other workers wait for them) and whether they were written now; else ``data``."""
    import quickdraw as qd
    from quickdraw.pipeline import resolve_source

    if args.input != "shards":
        return data, False
    kind, files, _ = resolve_source(data, None)
    if kind != "csv_ndjson":
        return data, False
    out = Path(args.shards_dir).expanduser() if args.shards_dir else (data if data.is_dir() else data.parent) / f"tfrecords-{args.shards}"
    if is_chief:
        say(f"shards: {out} (written once from {data}, then reused)")
    workers = args.shard_workers
    if workers is None:  # a process per core pays for its start (~5 s: it imports TensorFlow) above ~50 MB
        workers = None if sum(f.stat().st_size for f in files) > SMALL_SOURCE_BYTES else 1
    t0 = time.perf_counter()
    try:
        manifest, written = qd.ensure_shards(
            data, out, num_shards=args.shards, val_fraction=args.val_fraction, limit_per_class=args.limit_per_class,
            write=is_chief, wait_seconds=2 * 3600, workers=workers, progress=not args.no_progress,
        )  # fmt: skip
    except PermissionError as e:  # e.g. a read-only data folder
        raise SystemExit(f"cannot write the shards into {out} ({e}); choose a folder with --shards-dir") from e
    if written:
        total = sum(manifest["counts"].values())
        say(f"wrote {total:,} drawings into {2 * args.shards} shards in {time.perf_counter() - t0:.1f} s")
    return out, written


def plan_data(args: argparse.Namespace, replicas: int, is_chief: bool = True, say: Any = print) -> DataPlan:
    """Resolve ``--data`` (into shards by default), count the drawings of each split (from the
    manifests: no parse after the first), and size the epochs and the validation pass."""
    import quickdraw as qd

    source = resolve_data(args.data)
    bitmaps = is_bitmap_source(source)
    data, written = shard_source(args, source, is_chief, say)
    encoding = args.encoding if args.encoding != "auto" else ("plain" if bitmaps else "order")
    limit = None if data != source else args.limit_per_class  # the shards hold the limited set already
    counted = {split: qd.count_examples(data, split=split, val_fraction=args.val_fraction, limit_per_class=limit)
               for split in ("train", "val")}  # fmt: skip
    if args.batch_size % replicas:
        raise SystemExit(f"--batch-size {args.batch_size} is not a multiple of the {replicas} replicas")
    if counted["train"] < args.batch_size:
        raise SystemExit(f"{counted['train']} training drawings are fewer than one batch of {args.batch_size}")
    steps_per_epoch = args.steps_per_epoch or counted["train"] // args.batch_size
    val_steps = -(-args.val_limit // args.batch_size) if 0 < args.val_limit < counted["val"] else None
    return DataPlan(data, bitmaps, encoding, qd.resolve_labels(data), counted["train"], counted["val"], replicas,
                    args.batch_size, steps_per_epoch, steps_per_epoch * args.epochs, val_steps,
                    source if data != source else None, written)  # fmt: skip


def make_inputs(args: argparse.Namespace, strategy: Any, plan: DataPlan) -> tuple[Any, Any]:
    """The distributed training (repeated, whole batches) and validation datasets: one
    pipeline per worker, each shard batched to the per-replica batch; the validation pass
    bounded to ``plan.val_steps`` global batches (shards are pre-shuffled: a random sample)."""
    import quickdraw as qd

    limit = None if plan.source is not None else args.limit_per_class
    # uint8 batches, scaled to [0, 1] in the step (unit_images): a quarter of the bytes, and
    # the input pipeline's CPU per drawing the less (docs/capstone.md, issue 33)
    common = dict(labels=plan.labels, image_size=args.image_size, encoding=plan.encoding,
                  val_fraction=args.val_fraction, limit_per_class=limit, image_dtype="uint8",
                  num_parallel_calls=args.render_threads or None)  # fmt: skip

    def train_input(ctx: Any) -> Any:
        return qd.make_dataset(plan.data, split="train", batch_size=ctx.get_per_replica_batch_size(plan.global_batch),
                               repeat=True, drop_remainder=True, input_context=ctx, seed=args.seed, **common)

    def val_input(ctx: Any) -> Any:
        ds = qd.make_dataset(plan.data, split="val", batch_size=ctx.get_per_replica_batch_size(plan.global_batch),
                             input_context=ctx, **common)
        if plan.val_steps is None:
            return ds
        # each global batch takes one batch per local replica from this worker's pipeline
        return ds.take(plan.val_steps * plan.replicas // ctx.num_input_pipelines)

    return strategy.distribute_datasets_from_function(train_input), strategy.distribute_datasets_from_function(val_input)


def unit_images(images: Any) -> Any:
    """``uint8`` pixels -> ``float32`` in [0, 1], inside a replica's step (on its device, fused
    by XLA under ``--xla``): the same numbers as ``make_dataset``'s float32 images
    (``tests/test_quickdraw_pipeline.py`` checks all 256), so the models are unchanged."""
    import tensorflow as tf

    return tf.cast(images, tf.float32) * (1.0 / 255.0)


@dataclass
class Trainer:
    """The model, its optimizer and schedule, the metrics, and the distributed steps."""

    model: Any
    optimizer: Any
    schedule: Any
    train_loss: Any
    train_acc: Any
    val_metrics: dict[str, Any]  # val_loss, top1, top3, map3
    train_step: Any  # a tf.function: distributed batch -> summed loss
    eval_step: Any  # a tf.function: distributed batch -> None (updates val_metrics)

    def evaluate(self, val_ds: Any) -> dict[str, float]:
        for metric in self.val_metrics.values():
            metric.reset_state()
        for batch in val_ds:
            self.eval_step(batch)
        return {name: float(metric.result()) for name, metric in self.val_metrics.items()}


def make_model(args: argparse.Namespace, num_classes: int, channels: int) -> Any:
    """The ``--model``: notebook 06's MobileNet or compact CNN (``utils.models.build_model``),
    or ResNet-50 from ``keras.applications`` (random initialisation; ImageNet weights only with
    ``--pretrained``, which Keras downloads)."""
    import keras
    from keras import layers

    from utils.models import build_model

    if args.model != "resnet50":
        return build_model(args.model, num_classes, args.image_size, channels, alpha=args.alpha,
                           bn_momentum=args.bn_momentum)  # fmt: skip
    inputs = keras.Input((args.image_size, args.image_size, channels))
    # ImageNet weights expect pixels 0-255 around their mean (~117); random weights do not mind
    x = layers.Rescaling(255.0, offset=-117.0)(inputs) if args.pretrained else inputs
    backbone = keras.applications.ResNet50(include_top=False, weights="imagenet" if args.pretrained else None,
                                           input_shape=(args.image_size, args.image_size, channels), pooling="avg")
    x = layers.Dropout(0.2)(backbone(x))
    return keras.Model(inputs, layers.Dense(num_classes, dtype="float32", name="logits")(x), name="doodle_resnet50")


def build_trainer(args: argparse.Namespace, strategy: Any, plan: DataPlan) -> Trainer:
    """Model, optimizer (warm-up + cosine; loss scaling under float16) and metrics in the
    strategy's scope; the train and eval steps run on every replica with ``strategy.run``,
    each replica's forward and backward pass compiled with XLA under ``--xla``."""
    import keras
    import tensorflow as tf

    from utils.metrics import MapAtK

    if args.mixed_precision != "none":  # before the model is built: its layers take the policy
        keras.mixed_precision.set_global_policy(f"mixed_{args.mixed_precision}")
    with strategy.scope():
        model = make_model(args, len(plan.labels), plan.channels)
        warmup = min(int(args.warmup_epochs * plan.steps_per_epoch), max(plan.total_steps - 1, 0))
        schedule = keras.optimizers.schedules.CosineDecay(
            initial_learning_rate=args.lr / 10, decay_steps=max(plan.total_steps - warmup, 1), alpha=0.01,
            warmup_target=args.lr, warmup_steps=warmup,
        )
        optimizer = keras.optimizers.Adam(schedule)
        if args.mixed_precision == "float16":  # float16 gradients underflow without a loss scale
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        optimizer.build(model.trainable_variables)  # Keras 3: build in the scope before strategy.run
        train_loss, train_acc = keras.metrics.Mean("loss"), keras.metrics.SparseCategoricalAccuracy("accuracy")
        val_metrics = {"val_loss": keras.metrics.Mean("val_loss"),
                       "top1": keras.metrics.SparseCategoricalAccuracy("top1"),
                       "top3": keras.metrics.SparseTopKCategoricalAccuracy(k=3, name="top3"), "map3": MapAtK(k=3)}
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def forward_backward(images: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, list[tf.Tensor], tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = tf.cast(model(unit_images(images), training=True), tf.float32)  # the loss in float32 always
            loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=plan.global_batch)
            if model.losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
            scaled = optimizer.scale_loss(loss)  # the loss itself unless float16's loss scale applies
        return loss, tape.gradient(scaled, model.trainable_variables), logits

    if args.xla:  # XLA compiles this replica's work; the all-reduce in apply_gradients stays outside
        forward_backward = tf.function(forward_backward, jit_compile=True)

    def replica_train_step(images: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        loss, grads, logits = forward_backward(images, y)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        train_acc.update_state(y, logits)
        return loss

    def replica_eval_step(images: tf.Tensor, y: tf.Tensor) -> None:
        # The last, short batch may leave a replica with 0 examples, and on CPUs TF 2.21's
        # oneDNN Conv2D fails on an empty batch: skip the model call then.
        if tf.shape(images)[0] > 0:
            logits = tf.cast(model(unit_images(images), training=False), tf.float32)
            val_metrics["val_loss"].update_state(loss_fn(y, logits))
            for name in ("top1", "top3", "map3"):
                val_metrics[name].update_state(y, logits)

    @tf.function
    def train_step(batch: Any) -> tf.Tensor:
        per_replica = strategy.run(replica_train_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    @tf.function
    def eval_step(batch: Any) -> None:
        strategy.run(replica_eval_step, args=batch)

    return Trainer(model, optimizer, schedule, train_loss, train_acc, val_metrics, train_step, eval_step)


@dataclass
class Checkpoints:
    """Where this task writes: the chief into ``--checkpoint-dir``, the other workers into a
    scratch folder (deleted at the end), as TensorFlow's multi-worker tutorials do."""

    directory: Path | None
    write_dir: Path | None = None
    scratch: Path | None = None
    manager: Any = None
    start_step: int = 0

    def save(self, optimizer: Any) -> None:
        if self.manager is not None:
            self.manager.save(checkpoint_number=int(optimizer.iterations.numpy()))

    def remove_scratch(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.scratch.parent.rmdir()  # the last worker to finish removes .workers/


def restore(args: argparse.Namespace, trainer: Trainer, plan: DataPlan, task: tuple[bool, str, int],
            say: Any) -> Checkpoints:
    """Set up checkpointing and resume from the latest checkpoint of ``--checkpoint-dir``."""
    import tensorflow as tf

    import quickdraw as qd

    if not args.checkpoint_dir:
        return Checkpoints(None)
    is_chief, task_type, task_id = task
    directory = Path(args.checkpoint_dir).resolve()
    write_dir = directory if is_chief else directory / ".workers" / f"{task_type}_{task_id}"
    ckpt = tf.train.Checkpoint(model=trainer.model, optimizer=trainer.optimizer)
    found = Checkpoints(directory, write_dir, None if is_chief else write_dir,
                        tf.train.CheckpointManager(ckpt, str(write_dir), max_to_keep=2))
    latest = tf.train.latest_checkpoint(str(directory))
    if latest:
        saved = qd.LabelMap.load(directory) if (directory / "labels.json").is_file() else plan.labels
        if saved != plan.labels:
            raise SystemExit(f"{directory} holds a model for other classes ({saved}); use a new folder")
        ckpt.restore(latest).expect_partial()
        found.start_step = int(trainer.optimizer.iterations.numpy())
        say(f"resumed from {latest} at step {found.start_step} (epoch {found.start_step / plan.steps_per_epoch:.2f})")
    if is_chief:
        plan.labels.save(directory)
    return found


@dataclass
class Progress:
    """How far training got: the epochs' history, the step, and the time spent training."""

    history: list[dict[str, Any]]
    step: int
    seconds: float = 0.0
    examples: int = 0


def run_epochs(args: argparse.Namespace, trainer: Trainer, plan: DataPlan, datasets: tuple[Any, Any],
               ckpts: Checkpoints, is_chief: bool, say: Any) -> Progress:
    """Train from the restored step to the last one, epoch by epoch: a progress bar on the chief,
    a checkpoint every ``--checkpoint-every`` steps and at each epoch's end, a validation pass
    and a history row per epoch."""
    from tqdm.auto import tqdm

    train_ds, val_ds = datasets
    history: list[dict[str, Any]] = []
    if ckpts.directory is not None and (ckpts.directory / "history.json").is_file() and ckpts.start_step:
        history = [h for h in json.loads((ckpts.directory / "history.json").read_text()) if h["step"] <= ckpts.start_step]
    progress = Progress(history, ckpts.start_step)
    last_step = plan.total_steps if args.max_steps is None else min(plan.total_steps, args.max_steps)
    iterator = iter(train_ds)
    while progress.step < last_step:
        epoch = progress.step // plan.steps_per_epoch
        epoch_end = min((epoch + 1) * plan.steps_per_epoch, last_step)
        trainer.train_loss.reset_state()
        trainer.train_acc.reset_state()
        bar = tqdm(
            total=plan.steps_per_epoch, initial=progress.step - epoch * plan.steps_per_epoch,
            desc=f"epoch {epoch + 1}/{args.epochs}", unit="step", disable=args.no_progress or not is_chief,
            file=sys.stderr, dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 30.0,
        )  # fmt: skip
        first, t0 = progress.step, time.perf_counter()
        with bar:
            while progress.step < epoch_end:
                trainer.train_loss.update_state(trainer.train_step(next(iterator)))
                progress.step += 1
                bar.update(1)
                if progress.step % 10 == 0 or progress.step == epoch_end:
                    bar.set_postfix(loss=f"{float(trainer.train_loss.result()):.3f}",
                                    acc=f"{float(trainer.train_acc.result()):.3f}")
                if args.checkpoint_every and progress.step % args.checkpoint_every == 0 and progress.step != epoch_end:
                    ckpts.save(trainer.optimizer)
        seconds = time.perf_counter() - t0
        progress.seconds += seconds
        progress.examples += (progress.step - first) * plan.global_batch
        ckpts.save(trainer.optimizer)
        row = epoch_row(trainer, plan, epoch, progress.step, seconds, (progress.step - first) * plan.global_batch)
        # frozen-epochs: on purpose: history.json scores every epoch (a validation iterator an epoch)
        history.append({**row, **trainer.evaluate(val_ds)})
        say_epoch(say, history[-1])
        if is_chief and ckpts.directory is not None:
            (ckpts.directory / "history.json").write_text(json.dumps(history, indent=1) + "\n")
    return progress


def epoch_row(trainer: Trainer, plan: DataPlan, epoch: int, step: int, seconds: float, examples: int) -> dict[str, Any]:
    """One row of ``history.json``: the epoch's training numbers (validation is added to it)."""
    return {
        "epoch": epoch + 1,
        "step": step,
        "complete": step == (epoch + 1) * plan.steps_per_epoch,
        "loss": float(trainer.train_loss.result()),
        "accuracy": float(trainer.train_acc.result()),
        "seconds": seconds,
        "examples_per_sec": examples / seconds,
        "lr": float(trainer.schedule(step - 1)),
    }


def say_epoch(say: Any, row: dict[str, Any]) -> None:
    say(
        f"epoch {row['epoch']}: loss {row['loss']:.4f} acc {row['accuracy']:.4f} | "
        f"val top-1 {row['top1']:.4f} top-3 {row['top3']:.4f} MAP@3 {row['map3']:.4f} | "
        f"{row['examples_per_sec']:.0f} ex/s, {row['seconds']:.1f} s"
    )


def save_model(trainer: Trainer, ckpts: Checkpoints) -> tuple[Path | None, int | None]:
    """The whole model: EVERY worker saves, as in TensorFlow's multi-worker tutorials (saving can
    involve collective ops, which wait for all workers); the chief into ``--checkpoint-dir``, the
    others into their scratch folder, deleted afterwards."""
    if ckpts.write_dir is None:
        return None, None
    ckpts.write_dir.mkdir(parents=True, exist_ok=True)
    model_path = ckpts.write_dir / "model.keras"
    trainer.model.save(model_path)
    return model_path, model_path.stat().st_size


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Train (or resume) as the arguments say; return the results dictionary."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    strategy = make_strategy(args.strategy, args.logical_devices)  # first: MWMS starts a server

    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(args.seed)
    tf.get_logger().setLevel("ERROR")
    task = task_info(strategy)
    say = print if task[0] else (lambda *a, **k: None)
    plan = plan_data(args, strategy.num_replicas_in_sync, task[0], say)
    say(f"data {plan.data} ({'numpy bitmaps' if plan.bitmaps else 'strokes'}, encoding {plan.encoding}): "
        f"{len(plan.labels)} classes, {plan.n_train} train / {plan.n_val} val drawings "
        f"({plan.n_val_evaluated} evaluated each epoch)")
    if plan.source is None and args.strategy == "multiworker" and not plan.bitmaps and not any(plan.data.glob("*.tfrecord")):
        say("note: --input csv under multiworker: every worker parses every row and keeps its share (slow)")
    say(f"strategy {type(strategy).__name__}: {plan.replicas} replicas, global batch {plan.global_batch} "
        f"({plan.global_batch // plan.replicas} per replica), {plan.steps_per_epoch} steps/epoch")
    datasets = make_inputs(args, strategy, plan)
    trainer = build_trainer(args, strategy, plan)
    ckpts = restore(args, trainer, plan, task, say)
    try:
        progress = run_epochs(args, trainer, plan, datasets, ckpts, task[0], say)
        done = progress.history[-1] if progress.history and progress.history[-1]["step"] == progress.step else None
        final = done or {"step": progress.step, **trainer.evaluate(datasets[1])}
        model_path, model_bytes = save_model(trainer, ckpts)
    finally:
        ckpts.remove_scratch()
    results = collect_results(args, plan, trainer, progress, final, (model_path, model_bytes), ckpts.start_step)
    write_results(args, results, trainer, plan, ckpts, task, say)
    return results


def collect_results(args: argparse.Namespace, plan: DataPlan, trainer: Trainer, progress: Progress,
                    final: dict[str, Any], model_file: tuple[Path | None, int | None], start_step: int) -> dict[str, Any]:
    """The numbers of notebook 06's results table, and the checksums that let a multi-worker run
    show that every worker holds the same model."""
    import numpy as np

    def abs_sum(variables: list[Any]) -> float:
        return float(sum(np.abs(np.asarray(v)).sum(dtype=np.float64) for v in variables))

    return {
        "data": "built-in doodles" if args.data.startswith("builtin:") else str(plan.source or plan.data),
        "format": "numpy bitmaps" if plan.bitmaps else "strokes",
        "classes": len(plan.labels),
        "image_size": args.image_size,
        "encoding": plan.encoding,
        "model": f"mobilenet (alpha {args.alpha})" if args.model == "mobilenet" else args.model,
        "pretrained": args.pretrained,
        "mixed_precision": args.mixed_precision,
        "xla": args.xla,
        "conv_compute_dtype": _conv_compute_dtype(trainer.model),
        "strategy": args.strategy,
        "replicas": plan.replicas,
        "workers": _num_workers() if args.strategy == "multiworker" else 1,
        "global_batch": plan.global_batch,
        "epochs": args.epochs,
        "train_examples": plan.n_train,
        "val_examples": plan.n_val,
        "val_evaluated": plan.n_val_evaluated,
        "input": "shards" if plan.source is not None or any(plan.data.glob("*.tfrecord")) else "files",
        "shards_written": plan.shards_written,
        "steps_per_epoch": plan.steps_per_epoch,
        "resumed_from_step": start_step,
        "steps": progress.step,
        "seconds": progress.seconds,
        "examples_per_sec": progress.examples / progress.seconds if progress.seconds else None,
        "top1": final["top1"],
        "top3": final["top3"],
        "map3": final["map3"],
        "val_loss": final["val_loss"],
        "trainable_sum": abs_sum(trainer.model.trainable_weights),
        "non_trainable_sum": abs_sum(trainer.model.non_trainable_weights),
        "model_saved_to": str(model_file[0]) if model_file[0] else None,  # a non-chief's path is deleted by now
        "model_bytes": model_file[1],
        "history": progress.history,
    }


def write_results(args: argparse.Namespace, results: dict[str, Any], trainer: Trainer, plan: DataPlan,
                  ckpts: Checkpoints, task: tuple[bool, str, int], say: Any) -> None:
    """The submission (``--predict``, chief), ``results.json`` (chief) and, under
    ``infra.cluster``, a RESULT line for the notebook."""
    is_chief, task_type, task_id = task
    if args.predict and is_chief:
        results["submission"] = predict_submission(args, trainer.model, plan.labels, plan.encoding)
    results_path = Path(args.results) if args.results else (ckpts.directory / "results.json" if ckpts.directory else None)
    if is_chief and results_path is not None:
        results_path.parent.mkdir(parents=True, exist_ok=True)
        results_path.write_text(json.dumps(results, indent=1) + "\n")
        say(f"results written to {results_path}")
    if os.environ.get("COURSE_TASK"):  # launched by infra.cluster: report to the notebook
        from infra.process import report

        report(**{k: v for k, v in results.items() if k != "history"}, chief=is_chief, task=f"{task_type}:{task_id}")


def _conv_compute_dtype(model: Any) -> str | None:
    """The dtype the model's first convolution computes in (float16/bfloat16 under mixed precision)."""
    import keras

    convs = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.Conv2D)]
    return convs[0].compute_dtype if convs else None


def _num_workers() -> int:
    """Number of workers in TF_CONFIG (1 without it)."""
    cfg = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    cluster = cfg.get("cluster", {})
    return max(1, len(cluster.get("worker", [])) + len(cluster.get("chief", [])))


def ensemble_probabilities(models: list[Any], images: Any, tta: bool) -> Any:
    """The class probabilities of ``models`` averaged, each on ``images`` and, with ``tta``,
    on their mirror images too (left-right flips: a doodle mirrored is the same class)."""
    import tensorflow as tf

    views = [images, tf.image.flip_left_right(images)] if tta else [images]
    probs = [tf.nn.softmax(tf.cast(m(v, training=False), tf.float32)) for m in models for v in views]
    return tf.add_n(probs) / len(probs)


def predict_submission(args: argparse.Namespace, model: Any, labels: Any, encoding: str) -> dict[str, Any]:
    """Predict ``--predict`` (a test_simplified.csv), write and validate the submission.

    If a ``test_solution.csv`` (``key_id,word``) lies beside it, as for the built-in
    doodles, the submission's MAP@3 is computed too.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    import quickdraw as qd
    from utils.metrics import mapk, top_k_indices
    from utils.submission import validate_submission, write_submission

    test = Path(args.predict)
    ds = qd.make_dataset(
        test, split="all", image_size=args.image_size, batch_size=256, encoding=encoding,
        labels=labels, shuffle=False, with_key_id=True,
    )  # fmt: skip
    members = [model] + [keras.models.load_model(p) for p in args.ensemble]  # saved models: probabilities averaged
    predict = tf.function(lambda x: ensemble_probabilities(members, x, args.tta))
    keys, tops = [], []
    for images, _, key_ids in ds:
        tops.append(top_k_indices(predict(images).numpy(), 3))
        keys.append(key_ids.numpy())
    key_ids = np.concatenate(keys)
    top = np.concatenate(tops)
    out = Path(args.submission or (Path(args.checkpoint_dir or ".") / "submission.csv"))
    write_submission(out, key_ids, top, labels.names)
    with test.open(newline="") as f:  # the key ids Kaggle expects: every row of the test file, read apart
        expected = [int(row["key_id"]) for row in csv.DictReader(f)]
    report = validate_submission(out, labels.names, expected_key_ids=expected)
    info: dict[str, Any] = {"path": str(out), "rows": report.rows, "members": len(members), "tta": args.tta}
    solution = test.with_name("test_solution.csv")
    if solution.is_file():
        with solution.open(newline="") as f:
            truth = {int(r["key_id"]): r["word"] for r in csv.DictReader(f)}
        with out.open(newline="") as f:
            guesses = {int(r["key_id"]): r["word"].split(" ") for r in csv.DictReader(f)}
        common = sorted(truth.keys() & guesses.keys())
        info["map3"] = mapk([truth[k] for k in common], [guesses[k] for k in common])
    print(
        f"submission: {report.rows} rows written to {out}"
        + (f", MAP@3 {info['map3']:.4f}" if "map3" in info else "")
    )
    return info


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse, train, print the final line. Returns the exit code."""
    args = parse_args(argv)
    results = train(args)
    print(
        f"final: top-1 {results['top1']:.4f} top-3 {results['top3']:.4f} MAP@3 {results['map3']:.4f} "
        f"after {results['steps']} steps"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
