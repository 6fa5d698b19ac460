"""The built-in doodle set: a seeded generator of Quick, Draw!-style drawings.

Twenty-eight of Google's classes (templates in :mod:`quickdraw.shapes`), drawn by a sloppy
hand (wobble, pose, parts a little off, strokes swapped or left out), then simplified as
Google did (top-left at 0, longer side 255, RDP with epsilon 2) and written as Kaggle CSVs,
so the built-in data goes through the real-data code path. :func:`ensure_builtin_data`
generates a variant once under ``data/builtin/<variant>/`` and returns its path; the same
seed always gives the same files. Used in notebooks 04-06 and the Horovod scripts of 07.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quickdraw.formats import Drawing, write_kaggle_csv
from quickdraw.labels import LabelMap
from quickdraw.shapes import TEMPLATES, Stroke

GENERATOR_VERSION = 5
DEFAULT_SEED = 2018  # the year of the Kaggle competition

#: Variants: drawings per class for training, and per class for the Kaggle-style test file.
VARIANTS: dict[str, dict[str, int]] = {
    "smoke": {"per_class": 300, "test_per_class": 20},
    "full": {"per_class": 2500, "test_per_class": 100},
}
CLASSES: tuple[str, ...] = tuple(TEMPLATES)
_COUNTRIES = ("US", "GB", "DE", "BR", "CA", "RU", "AU", "FR", "PL", "IT", "JP", "KR", "SE", "CZ", "FI")


def _arclength(p: Stroke) -> np.ndarray:
    """The distance along the polyline ``p`` to each of its points."""
    return np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(p, axis=0), axis=1))])


def _resample(p: Stroke, step: float) -> Stroke:
    """Points every ``step`` along the polyline (keeps the ends)."""
    if len(p) < 2:
        return p
    s = _arclength(p)
    if s[-1] <= 0:
        return p[:1]
    n = max(2, int(np.ceil(s[-1] / step)) + 1)
    t = np.linspace(0, s[-1], n)
    return np.stack([np.interp(t, s, p[:, 0]), np.interp(t, s, p[:, 1])], axis=1)


def rdp(points: np.ndarray, epsilon: float = 2.0) -> np.ndarray:
    """Ramer-Douglas-Peucker simplification of a polyline ``(n, 2)``."""
    if len(points) < 3:
        return points
    ab, rel = points[-1] - points[0], points[1:-1] - points[0]
    norm = float(np.hypot(*ab))
    if norm == 0:
        d = np.hypot(rel[:, 0], rel[:, 1])
    else:
        d = np.abs(ab[0] * rel[:, 1] - ab[1] * rel[:, 0]) / norm
    k = int(np.argmax(d)) + 1  # the farthest point from the chord
    if d[k - 1] <= epsilon:
        return points[[0, -1]]
    return np.concatenate([rdp(points[: k + 1], epsilon)[:-1], rdp(points[k:], epsilon)])


def _wobble(p: Stroke, rng: np.random.Generator, amount: float) -> Stroke:
    """Low-frequency hand wobble along the stroke plus a little jitter (``amount``: frame units)."""
    n = len(p)
    if n < 2:
        return p + rng.normal(0, amount * 0.3, size=p.shape)
    s = _arclength(p)
    t = s / (s[-1] or 1.0)
    length = min(float(s[-1]), 4.0)
    out = p.copy()
    for axis in range(2):
        f = rng.uniform(0.3, 1.2) * (1 + length)  # longer strokes wobble more times
        out[:, axis] += amount * np.sin(2 * np.pi * (f * t + rng.random()))
    # kinks: a few units of 255 off the intended line, over a few units of length, so that
    # Google's RDP (epsilon 2) keeps about as many points as it keeps of a real stroke
    kink = rng.uniform(0.0, 0.007)
    noise = rng.normal(0, 1, size=(n + 7, 2))
    out += kink * np.stack([np.convolve(noise[:, k], _SMOOTH, mode="valid") for k in range(2)], axis=1)[:n]
    return out


_SMOOTH = np.exp(-np.arange(8) / 2.5)
_SMOOTH /= np.sqrt((_SMOOTH**2).sum())  # unit variance after smoothing


def _misplace(p: Stroke, rng: np.random.Generator, sloppy: float) -> Stroke:
    """A part drawn a little off: shifted and resized about its own centre."""
    if len(p) < 2:
        return p + rng.normal(0, 0.02 + 0.04 * sloppy, size=2)
    c = p.mean(axis=0)
    k = np.exp(rng.normal(0, 0.1 * sloppy))
    return c + (p - c) * k + rng.normal(0, 0.02 + 0.04 * sloppy, size=2)


def _sloppy_end(p: Stroke, rng: np.random.Generator, sloppy: float) -> Stroke:
    """Strokes that stop early or run on a little past where they were meant to end."""
    n = len(p)
    if n < 4 or rng.random() > 0.5 * sloppy:
        return p
    if rng.random() < 0.5:  # stop early
        return p[: max(2, n - int(rng.uniform(0, 0.15) * n))]
    d = p[-1] - p[-2]
    k = int(rng.integers(1, max(2, n // 8)))
    return np.concatenate([p, p[-1] + np.outer(np.arange(1, k + 1), d)])


def _warp(strokes: list[Stroke], rng: np.random.Generator, amount: float) -> list[Stroke]:
    """One smooth random deformation of the whole drawing, as when a hand runs out of room."""
    k = rng.uniform(0.6, 1.8, size=4) * rng.choice([-1.0, 1.0], size=4)
    ph = rng.uniform(0, 2 * np.pi, size=2)
    ax, ay = rng.uniform(0, amount, size=2)
    out = []
    for p in strokes:
        x, y = p[:, 0], p[:, 1]
        q = p.copy()
        q[:, 0] += ax * np.sin(k[0] * x + k[1] * y + ph[0])
        q[:, 1] += ay * np.sin(k[2] * x + k[3] * y + ph[1])
        out.append(q)
    return out


def simplify_like_google(strokes: list[np.ndarray]) -> list[np.ndarray]:
    """Google's simplification of densely sampled strokes: top-left to 0, longer side to 255,
    RDP with epsilon 2; integer-valued float32 ``(n, 2)`` strokes (at least one point each)."""
    allp = np.concatenate(strokes)
    lo = allp.min(axis=0)
    extent = float((allp.max(axis=0) - lo).max()) or 1.0
    out = []
    for s in strokes:
        q = rdp((s - lo) * (255.0 / extent), 2.0)
        q = np.clip(np.rint(q), 0, 255)
        keep = np.ones(len(q), bool)
        keep[1:] = np.any(np.diff(q, axis=0) != 0, axis=1)
        out.append(q[keep].astype(np.float32))
    return out


def doodle(word: str, rng: np.random.Generator) -> list[np.ndarray]:
    """One synthetic drawing of class ``word`` in the simplified 0-255 frame: the template's
    strokes, drawn by a hurried hand (parts off, warp, pose, wobble), simplified as Google did."""
    strokes = [np.asarray(p, dtype=np.float64) for p in TEMPLATES[word](rng)]
    sloppy = rng.uniform(0.0, 1.0)  # how hurried this drawing is
    strokes = [_misplace(p, rng, 1.6 * sloppy) for p in strokes]  # parts not quite in place
    if len(strokes) > 2 and rng.random() < 0.3 * sloppy:  # a part left out in the hurry
        del strokes[int(rng.integers(1, len(strokes)))]
    if len(strokes) > 1 and rng.random() < 0.15:  # two neighbouring strokes swapped
        i = int(rng.integers(0, len(strokes) - 1))
        strokes[i], strokes[i + 1] = strokes[i + 1], strokes[i]
    strokes = [_sloppy_end(_resample(p, 0.025), rng, sloppy) for p in strokes]
    strokes = _warp(strokes, rng, rng.uniform(0.0, 0.28))
    ang = rng.normal(0, 0.15)
    c, s = np.cos(ang), np.sin(ang)
    sx, sy = np.exp(rng.normal(0, 0.2, size=2))
    sh = rng.normal(0, 0.08)
    m = np.array([[c, -s], [s, c]]) @ np.array([[sx, sh], [0, sy]])
    wob = rng.uniform(0.005, 0.03)
    strokes = [_wobble(p @ m.T, rng, wob) for p in strokes]
    if rng.random() < 0.04:  # a stray extra stroke
        a = rng.uniform(-1, 1, size=2)
        b = a + rng.normal(0, 0.3, size=2)
        strokes.append(_wobble(_resample(np.stack([a, b]), 0.025), rng, wob))
    return simplify_like_google(strokes)


def generate_drawings(
    word: str, n: int, *, seed: int = DEFAULT_SEED, stream: int = 0, key_offset: int = 0
) -> list[Drawing]:
    """``n`` seeded drawings of one class with Kaggle-like metadata; key_ids are 16-digit
    numbers like the real ones, unique within a class and stream."""
    rng = np.random.default_rng([seed, zlib.crc32(word.encode()), stream])
    keys: set[int] = set()
    out = []
    for _ in range(n):
        key = int(rng.integers(4_500_000_000_000_000, 6_800_000_000_000_000)) + key_offset
        while key in keys:
            key += 1
        keys.add(key)
        day, sec, frac = int(rng.integers(1, 29)), int(rng.integers(0, 86400)), int(rng.integers(0, 100000))
        ts = f"2017-03-{day:02d} {sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{frac:05d}"
        strokes = doodle(word, rng)
        country = _COUNTRIES[int(rng.integers(0, len(_COUNTRIES)))]
        out.append(Drawing(word=word, key_id=key, strokes=strokes, countrycode=country,
                           recognized=bool(rng.random() < 0.92), timestamp=ts))
    return out


def generate_builtin(root: str | Path, *, per_class: int, test_per_class: int = 0,
                     classes: Sequence[str] = CLASSES, seed: int = DEFAULT_SEED) -> Path:
    """Write a Kaggle-layout doodle set under ``root`` and return ``root``: ``train_simplified/
    <word>.csv``, the test files (when ``test_per_class > 0``), ``labels.json`` and
    ``manifest.json`` (written last: its presence means complete)."""
    root = Path(root)
    (root / "train_simplified").mkdir(parents=True, exist_ok=True)
    counts = {}
    for word in classes:
        drawings = generate_drawings(word, per_class, seed=seed)
        counts[word] = write_kaggle_csv(root / "train_simplified" / f"{word}.csv", drawings)
    tests = write_test_set(root, classes, test_per_class, seed) if test_per_class else 0
    LabelMap(classes).save(root / "labels.json")
    manifest = _manifest(per_class, test_per_class, classes, seed) | {"counts": counts, "test": tests}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return root


def write_test_set(root: Path, classes: Sequence[str], per_class: int, seed: int) -> int:
    """Kaggle's test files under ``root``: ``test_simplified.csv`` (doodles of their own, new
    key_ids, shuffled, no labels) and ``test_solution.csv`` (``key_id,word``); returns how many."""
    test = [d for w in classes for d in generate_drawings(w, per_class, seed=seed, stream=1, key_offset=1)]
    test = [test[i] for i in np.random.default_rng([seed, 7]).permutation(len(test))]
    write_kaggle_csv(root / "test_simplified.csv", test, test=True)
    with open(root / "test_solution.csv", "w", encoding="utf-8") as f:
        f.write("key_id,word\n")
        f.writelines(f"{d.key_id},{d.word.replace(' ', '_')}\n" for d in test)
    return len(test)


def _manifest(per_class: int, test_per_class: int, classes: Sequence[str], seed: int) -> dict:
    return {"generator_version": GENERATOR_VERSION, "seed": seed, "per_class": per_class,
            "test_per_class": test_per_class, "classes": list(classes)}


def builtin_dir(variant: str = "smoke", data_dir: str | Path | None = None) -> Path:
    """Where a built-in variant lives: ``data/builtin/<variant>`` (not generated here)."""
    if data_dir is None:
        from utils.config import DATA_DIR as data_dir
    return Path(data_dir) / "builtin" / variant


def ensure_builtin_data(
    variant: str = "smoke", *, data_dir: str | Path | None = None, force: bool = False
) -> Path:
    """Generate the built-in doodle set ``variant`` ("smoke" or "full") if missing; return its path.

    ``data/builtin/<variant>/`` (see :func:`generate_builtin`) is reused while its manifest
    matches the generator version, seed and sizes. Safe when two processes call it at once (each
    writes a temporary directory and renames it into place). Used in notebooks 04-06 and the
    scripts of 07: ``path = ensure_builtin_data(utils.choose(smoke="smoke", full="full"))``.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown built-in variant {variant!r}; choose from {sorted(VARIANTS)}")
    spec = VARIANTS[variant]
    target = builtin_dir(variant, data_dir)
    want = _manifest(spec["per_class"], spec["test_per_class"], CLASSES, DEFAULT_SEED)
    if not force and _matches(target, want):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(target.parent, variant)
    tmp = target.parent / f".{variant}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        generate_builtin(tmp, **spec)
        if target.exists():
            if not force and _matches(target, want):  # another process finished first
                return target
            old = target.parent / f".{variant}.old-{os.getpid()}"
            os.replace(target, old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not _matches(target, want):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _remove_stale(parent: Path, variant: str) -> None:
    """Delete the ``.<variant>.tmp-<pid>`` / ``.old-<pid>`` directories of processes that died
    while generating (SIGKILL skips their clean-up)."""
    for path in parent.glob(f".{variant}.*-*"):
        kind, _, pid = path.name[len(variant) + 2 :].partition("-")
        if kind not in ("tmp", "old") or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)  # no error: still running (maybe generating right now)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:  # alive, another user's
            pass


def _matches(target: Path, want: dict) -> bool:
    try:
        have = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return all(have.get(k) == v for k, v in want.items())


def load_arrays(n: int, *, image_size: int = 28, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``n`` built-in doodles as ``(images, labels, class_names)``, without files or TensorFlow.

    ``float32`` images ``(n, size, size, 1)`` in [0, 1], ``int64`` labels: the first
    ``ceil(n / classes)`` drawings of each class (as in ``train_simplified/<word>.csv``),
    balanced, in an order shuffled by ``seed``. Runs under NumPy 1.23 too; used by the
    Horovod scripts of notebook 07 (``infra.horovod_job``).
    """
    from quickdraw.render import render_batch

    if n < 1:
        raise ValueError(f"need n >= 1, got {n}")
    per = -(-n // len(CLASSES))
    drawings = [(d.strokes, label) for label, w in enumerate(CLASSES) for d in generate_drawings(w, per)]
    # round-robin over classes so that the first n are balanced, then shuffle
    drawings = [drawings[c * per + i] for i in range(per) for c in range(len(CLASSES))][:n]
    order = np.random.default_rng(seed).permutation(n)
    images = render_batch([drawings[i][0] for i in order], image_size)
    labels = np.array([drawings[i][1] for i in order], np.int64)
    return images.astype(np.float32) / 255.0, labels, list(CLASSES)
