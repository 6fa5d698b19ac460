"""infra.watchdog: the guardian that cleans up after a dead owner and the lifetime that joins it
to a normal exit (used by infra.netns, infra.cluster and infra.slurm; exit_if_stuck is tested
with the Horovod helpers)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from infra.watchdog import Lifetime, orphans, owner_tag
from utils.config import PROJECT_ROOT

_OWNER = """
import sys, time
from infra.watchdog import Lifetime
life = Lifetime(lambda: None, "shutil:rmtree", [sys.argv[1]])
guardian = life.guardian_pid
if sys.argv[2] == "dismiss":
    life.end()
print(guardian, flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("dismissed", [False, True])
def test_guardian_cleans_up_after_a_killed_owner_unless_dismissed(tmp_path: Path, dismissed: bool) -> None:
    folder = tmp_path / "left-behind"
    folder.mkdir()
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(folder), "dismiss" if dismissed else "keep"],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        guardian = int(owner.stdout.readline())
    finally:
        owner.kill()  # SIGKILL: the owner cannot clean up itself
        owner.wait()
        owner.stdout.close()
    deadline = time.monotonic() + 20
    while psutil.pid_exists(guardian) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(guardian), "the guardian ended"
    assert folder.exists() is dismissed


def test_guardian_is_out_of_reach_of_ctrl_c_and_exits_when_dismissed(tmp_path: Path) -> None:
    folder = tmp_path / "kept"
    folder.mkdir()
    life = Lifetime(lambda: None, "shutil:rmtree", [str(folder)])
    guardian = life.guardian_pid
    try:
        assert os.getsid(guardian) != os.getsid(0)  # its own session: Ctrl-C of the kernel's group misses it
    finally:
        life.end()
    assert not psutil.pid_exists(guardian) and folder.exists() and life.guardian_pid is None


_LIVING = """
import sys
from infra.watchdog import Lifetime
first = Lifetime(lambda: print("stop first", flush=True), "shutil:rmtree", [sys.argv[1]])
second = Lifetime(lambda: print("stop second", flush=True), "shutil:rmtree", [sys.argv[1]])
if sys.argv[2] == "end":
    first.end(); second.end()
"""


@pytest.mark.parametrize("ended", [False, True])
def test_a_lifetime_stops_its_owner_at_a_normal_exit_unless_ended(tmp_path: Path, ended: bool) -> None:
    """Not ended: the owner's stop runs at exit, the newest first (a cluster before its network),
    and the guardians, told by nobody, clean up too; ended: nothing runs, the folder stays."""
    folder = tmp_path / "owned"
    folder.mkdir()
    done = subprocess.run([sys.executable, "-c", _LIVING, str(folder), "end" if ended else "exit"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == ([] if ended else ["stop second", "stop first"])
    deadline = time.monotonic() + 20
    while folder.exists() and not ended and time.monotonic() < deadline:
        time.sleep(0.05)
    assert folder.exists() is ended


def test_ending_a_lifetime_twice_is_harmless(tmp_path: Path) -> None:
    life = Lifetime(lambda: None, "shutil:rmtree", [str(tmp_path)])
    life.end()
    life.end()
    assert tmp_path.exists()


def test_orphans_are_the_things_of_dead_owners_only() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        dead_tag = owner_tag(child.pid)
    finally:
        child.kill()
        child.wait()
    pattern = re.compile(r"^crs-(\d+)-(\d+)-")
    names = [f"crs-{owner_tag()}-0-sw", f"crs-{dead_tag}-1-h0", "crs-not-a-tag", "other"]
    assert orphans(names, pattern) == [f"crs-{dead_tag}-1-h0"]
    alive, started = owner_tag().split("-")
    assert orphans([f"crs-{alive}-{int(started) + 1}-x"], pattern) != []  # a reused pid: another start time
