"""Interrupting notebook 09 in the middle of a hang leaves nothing behind (issue 17).

Runs notebook 09's own cells in a fresh kernel (smoke settings): the setup cells, then §3's
cell in which worker 1 never starts, interrupted (as Jupyter's stop button does) while
worker 0 waits in ``MultiWorkerMirroredStrategy()``; then the notebook's own last check
("Nothing left behind": no child process, no temporary folder) must pass in the same kernel.
"""

from __future__ import annotations

import queue
import time

import nbformat
import psutil
import pytest
from jupyter_client.manager import start_new_kernel

from utils import config

pytestmark = pytest.mark.slow
NOTEBOOK = config.PROJECT_ROOT / "notebooks" / "09_troubleshooting.ipynb"


def code_cells() -> list[str]:
    return [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]


def cell_starting(cells: list[str], start: str) -> str:
    hits = [c for c in cells if c.startswith(start)]
    assert len(hits) == 1, f"expected one cell starting with {start!r} in {NOTEBOOK.name}, found {len(hits)}"
    return hits[0]


def reply_to(client, msg_id: str, timeout: float = 300) -> dict:
    """The execute_reply content (status ok/error, ename) of the request ``msg_id``."""
    reply = client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=timeout)
    return reply["content"]


def press_stop_until_reply(manager, client, msg_id: str, presses: int = 3, every: float = 12.0) -> tuple[dict, int]:
    """Interrupt the kernel as Jupyter's stop button does, again every ``every`` s without a reply.

    A person presses stop again when the first press seems lost, and one can be: CPython
    swallows a KeyboardInterrupt raised while the main thread runs a finaliser (``__del__``,
    a weakref callback) and prints "Exception ignored in" instead. Seen once in CI (the cell
    ran on to its end), the likeliest cause. Returns the execute_reply content and the presses.
    """
    for press in range(1, presses):
        manager.interrupt_kernel()
        try:
            return reply_to(client, msg_id, timeout=every), press
        except queue.Empty:
            pass
    manager.interrupt_kernel()
    return reply_to(client, msg_id, timeout=120), presses


def kernel_stderr(client) -> str:
    """What the kernel has written to stderr so far (iopub stream messages), for error messages."""
    text = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            return "".join(text)[-3000:]
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stderr":
            text.append(msg["content"]["text"])


def run(client, code: str, timeout: float = 300) -> dict:
    """Execute ``code``; return its execute_reply content."""
    return reply_to(client, client.execute(code), timeout)


def test_interrupted_hang_leaves_no_process_and_no_temp_folder(monkeypatch):
    monkeypatch.setenv("COURSE_SMOKE", "1")
    cells = code_cells()
    setup, imports = cells[0], cells[1]
    hang_cell = cell_starting(cells, "def worker(absent):")
    final_check = cell_starting(cells, "import psutil")
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(NOTEBOOK.parent))
    try:
        kernel = psutil.Process(manager.provisioner.process.pid)
        for code in (setup, imports):
            assert run(client, code)["status"] == "ok"
        msg_id = client.execute(hang_cell)
        # wait until the cluster runs (its workers are the kernel's children), then press "stop"
        deadline = time.monotonic() + 120
        while len(kernel.children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(kernel.children()) >= 2, "the §3 cluster never started"
        workers = kernel.children(recursive=True)
        time.sleep(3)
        reply, presses = press_stop_until_reply(manager, client, msg_id)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", (
            f"{reply.get('ename')}: {reply.get('evalue')} after {presses} interrupt(s); the kernel's stderr:\n"
            + kernel_stderr(client)
        )
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == [], f"still running after the interrupt: {alive}"
        result = run(client, final_check)
        assert result["status"] == "ok", f"{result.get('ename')}: {result.get('evalue')}"
    finally:
        manager.shutdown_kernel(now=True)
        client.stop_channels()
