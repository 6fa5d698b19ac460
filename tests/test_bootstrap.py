"""`make lab` / `make test` set-up: any Python 3.10–3.13; one clear line when none or PyPI is missing."""

from __future__ import annotations

import os
import shutil
import subprocess

from utils.config import PROJECT_ROOT

BOOTSTRAP = PROJECT_ROOT / "tools" / "bootstrap.sh"


def bare_path(tmp_path, *fakes: tuple[str, str]) -> str:
    """A PATH with the tools bootstrap.sh uses and, as Pythons, only the given fake scripts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "sha256sum", "cut", "tail", "head", "rm", "touch", "grep", "dirname", "cat"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    for name, script in fakes:
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    return str(bin_dir)


def run_bootstrap(tmp_path, **env: str) -> subprocess.CompletedProcess:
    # `make test PYTHON=...` puts PYTHON in our environment: only the test decides it here
    inherited = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VENV", "REQ")}
    return subprocess.run(
        ["bash", str(BOOTSTRAP)],
        env={**inherited, **env},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_missing_python_is_one_clear_line(tmp_path) -> None:
    result = run_bootstrap(tmp_path, PYTHON=str(tmp_path / "no-such-python"), VENV=str(tmp_path / "venv"))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "is not Python 3.10–3.13" in lines[0]


def test_wrong_python_version_is_one_clear_line(tmp_path) -> None:
    fake = tmp_path / "python3.9"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Python 3.9.0'; exit 1\n")
    fake.chmod(0o755)
    result = run_bootstrap(tmp_path, PYTHON=str(fake), VENV=str(tmp_path / "venv"))
    assert result.returncode != 0
    assert result.stderr.strip() == (
        f"error: {fake} is not Python 3.10–3.13 (Python 3.9.0); TensorFlow 2.21 has wheels for 3.10, 3.11, 3.12 and 3.13"
    )


def test_no_package_index_is_one_clear_line(tmp_path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("six==1.16.0\n")
    result = run_bootstrap(
        tmp_path,
        VENV=str(tmp_path / "venv"),
        REQ=str(requirements),
        PIP_INDEX_URL="http://127.0.0.1:9/simple",  # nothing listens on the discard port
        PIP_EXTRA_INDEX_URL="",
        PIP_FIND_LINKS="",
        PIP_NO_CACHE_DIR="1",
        PIP_CONFIG_FILE=os.devnull,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot reach the Python package index"), lines[0]


def test_no_supported_python_on_the_path_is_one_clear_line(tmp_path) -> None:
    old = "#!/bin/sh\necho 3.9\n"  # only an old Python on the PATH
    path = bare_path(tmp_path, ("python3", old), ("python3.9", old))
    result = run_bootstrap(tmp_path, PATH=path, VENV=str(tmp_path / "venv"))
    assert result.returncode != 0
    assert result.stderr.strip().startswith("error: no Python 3.10–3.13 found"), result.stderr


def test_a_supported_python_other_than_311_is_taken_and_named(tmp_path) -> None:
    # answers the version probe, then fails at `-m venv`: enough to see which one was taken
    fake = '#!/bin/sh\nif [ "$1" = -c ]; then echo 3.12; exit 0; fi\necho "no venv here" >&2; exit 1\n'
    path = bare_path(tmp_path, ("python3.12", fake), ("python3", "#!/bin/sh\necho 3.9\n"))
    result = run_bootstrap(tmp_path, PATH=path, VENV=str(tmp_path / "venv"))
    assert "Using python3.12 (Python 3.12)" in result.stdout, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "error: could not create " + str(tmp_path / "venv") + " with python3.12: no venv here "
        "(on Debian/Ubuntu: apt install python3.12-venv)"
    )
