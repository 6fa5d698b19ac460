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


def test_install_replaces_an_older_tensorflow_with_the_runtimes_build(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(colab, "installed_version", lambda package: "2.19.0")
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)  # not imported in this session yet
    run = Recorder()
    message = colab.install(tmp_path, run=run, gpu=True)
    assert run.calls[0][-1] == "tensorflow[and-cuda]==2.21.0" and run.calls[1][-1].endswith("requirements-colab.txt")
    assert "installed tensorflow[and-cuda]==2.21.0 (Colab had 2.19.0)" in message


def test_install_asks_for_a_restart_when_the_old_tensorflow_is_loaded(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(colab, "installed_version", lambda package: "2.19.0")
    monkeypatch.setitem(sys.modules, "tensorflow", object())
    with pytest.raises(colab.RestartRequired, match="Runtime → Restart session"):
        colab.install(tmp_path, run=Recorder(), gpu=False)


def test_requirements_colab_leaves_tensorflow_to_install() -> None:
    from utils.config import PROJECT_ROOT

    lines = [line.split("==")[0] for line in (PROJECT_ROOT / "requirements-colab.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    assert "tensorflow" not in lines and "tf-keras" in lines
