"""infra.colab: what the setup cell installs on Colab, decided per TensorFlow version and runtime."""

from __future__ import annotations

import sys

import pytest

from infra import colab


@pytest.mark.parametrize(
    ("installed", "gpu", "wanted"),
    [
        ("2.21.0", False, None),
        ("2.21.3", True, None),  # any 2.21 patch release is kept
        ("2.19.0", False, "tensorflow==2.21.0"),
        ("2.19.0", True, "tensorflow[and-cuda]==2.21.0"),
        ("2.210.0", True, "tensorflow[and-cuda]==2.21.0"),  # not a 2.21 release
        (None, False, "tensorflow==2.21.0"),
    ],
)
def test_which_tensorflow_to_install(installed, gpu, wanted) -> None:
    assert colab.tensorflow_requirement(installed, gpu) == wanted


class Recorder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv, check):  # the subset of subprocess.run that install uses
        assert check is True
        self.calls.append(list(argv))


def test_install_keeps_colabs_tensorflow_when_it_is_221(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(colab, "installed_version", lambda package: "2.21.0")
    run = Recorder()
    message = colab.install(tmp_path, run=run, gpu=True)
    assert run.calls == [[sys.executable, "-m", "pip", "install", "-q", "-r", str(tmp_path / "requirements-colab.txt")]]
    assert message.startswith("kept Colab's TensorFlow 2.21.0")


class FakePip(Recorder):
    """Colab's package set (googlecolab/backend-info, 2026-08); installing TensorFlow 2.21 also
    replaces protobuf and h5py, as pip does there."""

    def __init__(self) -> None:
        super().__init__()
        self.versions = {"tensorflow": "2.20.0", "keras": "3.13.2", "tf-keras": "2.20.1", "protobuf": "5.29.6",
                         "h5py": "3.14.0", "numpy": "2.1.3"}

    def __call__(self, argv, check):
        super().__call__(argv, check)
        if argv[-1].startswith("tensorflow"):
            self.versions.update(tensorflow="2.21.0", protobuf="6.31.1", h5py="3.16.0")
        else:
            self.versions.update({"keras": "3.15.1", "tf-keras": "2.21.0"})


def test_install_replaces_colabs_tensorflow_with_the_runtimes_build(monkeypatch, tmp_path) -> None:
    pip = FakePip()
    monkeypatch.setattr(colab, "installed_version", pip.versions.get)
    for module in colab.WATCHED.values():  # a fresh session: nothing imported yet
        monkeypatch.delitem(sys.modules, module, raising=False)
    message = colab.install(tmp_path, run=pip, gpu=True)
    assert pip.calls[0][-1] == "tensorflow[and-cuda]==2.21.0" and pip.calls[1][-1].endswith("requirements-colab.txt")
    assert "installed tensorflow[and-cuda]==2.21.0 (Colab had 2.20.0)" in message


@pytest.mark.parametrize("loaded", ["tensorflow", "google.protobuf", "h5py", "keras"])
def test_install_asks_for_a_restart_when_a_replaced_package_is_loaded(monkeypatch, tmp_path, loaded) -> None:
    pip = FakePip()
    monkeypatch.setattr(colab, "installed_version", pip.versions.get)
    for module in colab.WATCHED.values():
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, loaded, object())  # imported before the setup cell ran
    with pytest.raises(colab.RestartRequired, match="Runtime → Restart session") as raised:
        colab.install(tmp_path, run=pip, gpu=False)
    name = {v: k for k, v in colab.WATCHED.items()}[loaded]
    assert f"{name} {FakePip().versions[name]} → {pip.versions[name]}" in str(raised.value)


def test_no_restart_when_nothing_loaded_changed(monkeypatch, tmp_path) -> None:
    pip = FakePip()
    monkeypatch.setattr(colab, "installed_version", pip.versions.get)
    for module in colab.WATCHED.values():
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, "numpy", object())  # loaded, but pip left it alone
    assert colab.install(tmp_path, run=pip, gpu=False).startswith("installed tensorflow==2.21.0")


def test_requirements_colab_leaves_tensorflow_to_install() -> None:
    from utils.config import PROJECT_ROOT

    lines = [line.split("==")[0] for line in (PROJECT_ROOT / "requirements-colab.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    assert "tensorflow" not in lines and "tf-keras" in lines and "keras" in lines  # Colab's own Keras is replaced


def test_colab_environment_needs_colabs_python(tmp_path) -> None:
    """tools/setup_colab_env.sh says in one line that it cannot build without Python 3.13 (exit 3:
    make test then runs the simple Colab rehearsal)."""
    import subprocess

    from utils.config import PROJECT_ROOT

    result = subprocess.run(["bash", "tools/setup_colab_env.sh"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "COLAB_PYTHON": "/bin/false", "HOME": str(tmp_path)},
                            timeout=60)
    assert result.returncode == 3 and result.stderr.strip().startswith("setup_colab_env: no Python 3.13")
    assert not (tmp_path / ".cache").exists()  # nothing built
