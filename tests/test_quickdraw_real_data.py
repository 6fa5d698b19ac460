"""The real test set shipped in data/real: intact, complete, attributed, the built-in classes."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

import quickdraw as qd
from quickdraw import real
from utils.config import DATA_DIR, PROJECT_ROOT


def test_files_match_the_manifest() -> None:
    manifest = qd.verify_real_test_set()
    assert manifest["licence"] == "CC BY 4.0" and "Google" in manifest["attribution"]
    sizes = sum(f["bytes"] for f in manifest["files"].values())
    assert sizes == sum(p.stat().st_size for p in (DATA_DIR / "real").glob("*/*.ndjson"))
    assert sizes < 500_000  # "a few hundred KB at most"


def test_every_builtin_class_has_its_real_drawings() -> None:
    manifest = qd.verify_real_test_set()
    assert tuple(manifest["classes"]) == qd.BUILTIN_CLASSES
    drawings = qd.read_real_test()  # strict: a damaged row raises
    per_class = {name: sum(d.word == name for d in drawings) for name in qd.BUILTIN_CLASSES}
    assert set(per_class.values()) == {real.PER_CLASS}, per_class
    assert all(d.label == qd.BUILTIN_CLASSES.index(d.word) for d in drawings)
    assert len({d.key_id for d in drawings}) == len(drawings)
    assert qd.resolve_labels(qd.real_test_dir()) == qd.LabelMap(qd.BUILTIN_CLASSES)


def test_raw_lines_are_the_first_simplified_drawings() -> None:
    raw = qd.read_real_test("raw")
    simplified = {d.key_id: d for d in qd.read_real_test()}
    assert {d.word for d in raw} == set(real.RAW_CLASSES) and len(raw) == 5 * len(real.RAW_CLASSES)
    assert all(d.has_time for d in raw)
    for d in raw:  # same drawing: same key_id, same bounding box up to Google's RDP epsilon
        s = simplified[d.key_id]
        span_raw = np.ptp(np.concatenate(d.strokes)[:, :2], axis=0)
        span_simple = np.ptp(np.concatenate(s.strokes), axis=0)
        assert s.word == d.word and np.abs(span_raw - span_simple).max() <= 6


def test_licence_and_attribution_are_there() -> None:
    licence = (DATA_DIR / "real" / "LICENSE").read_text()
    readme = (DATA_DIR / "README.md").read_text()
    for text in (licence, readme):
        assert "CC BY 4.0" in text and "Google" in text and "creativecommons.org/licenses/by/4.0" in text
    for name in qd.BUILTIN_CLASSES:  # every shipped file is listed with its source
        assert f"`real/simplified/{name}.ndjson`" in readme
    assert "51bbdbb35220" in readme and "5ab788cb27b6" in readme


def test_a_damaged_copy_is_caught(tmp_path) -> None:
    copy = tmp_path / "real"
    shutil.copytree(DATA_DIR / "real", copy)
    assert qd.verify_real_test_set(copy)["classes"] == list(qd.BUILTIN_CLASSES)  # the control
    path = copy / "simplified" / "circle.ndjson"
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(qd.RealDataError, match="circle.ndjson differs"):
        qd.verify_real_test_set(copy)
    path.unlink()
    with pytest.raises(qd.RealDataError, match="missing"):
        qd.verify_real_test_set(copy)
    (copy / "LICENSE").unlink()
    with pytest.raises(qd.RealDataError, match="licence"):
        qd.verify_real_test_set(copy)


def test_build_reproduces_the_shipped_files(tmp_path) -> None:
    """build_real_test_set from a sample-shaped folder made of the shipped files gives the same bytes."""
    sample = tmp_path / "sample"
    for kind in ("simplified", "raw"):
        dst = sample / real.SOURCES[kind]["dir"]
        dst.mkdir(parents=True)
        for f in qd.real_test_dir(kind).glob("*.ndjson"):
            extra = b'{"word": "x"}\n' if kind == "raw" else b""  # raw sources are longer: cut to 5
            shutil.copy(f, dst / f.name)
            (dst / f.name).write_bytes(f.read_bytes() + extra)
    out = real.build_real_test_set(sample, tmp_path / "out")
    rebuilt = json.loads((out / "manifest.json").read_text())
    shipped = json.loads((DATA_DIR / "real" / "manifest.json").read_text())
    assert {k: v["sha256"] for k, v in rebuilt["files"].items()} == {
        k: v["sha256"] for k, v in shipped["files"].items()
    }


def test_load_real_test_arrays() -> None:
    x, y, names = qd.load_real_test(image_size=28)
    assert x.shape == (real.PER_CLASS * len(names), 28, 28, 1) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() == 1.0 and names == list(qd.BUILTIN_CLASSES)
    assert np.bincount(y).tolist() == [real.PER_CLASS] * len(names)


def test_git_keeps_the_real_set_and_ignores_generated_data() -> None:
    if shutil.which("git") is None or not (PROJECT_ROOT / ".git").exists():
        pytest.skip("not a git checkout")

    def ignored(rel: str) -> bool:
        r = subprocess.run(["git", "check-ignore", "-q", rel], cwd=PROJECT_ROOT, check=False)
        return r.returncode == 0

    assert not any(
        ignored(f"data/real/{rel}") for rel in ("manifest.json", "LICENSE", "simplified/circle.ndjson")
    )
    assert not ignored("data/README.md")
    assert ignored("data/builtin/smoke/manifest.json") and ignored("data/shards/x.tfrecord")
