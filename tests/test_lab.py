"""The main job works: JupyterLab from the project environment serves the course.

Starts ``jupyter lab`` on a free localhost port, lists the notebooks through the REST API,
starts a ``python3`` kernel, runs ``import utils`` in it over the kernel websocket, then shuts
everything down and checks that the server process and its port are gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from infra.process import stop_child
from utils import config

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def api(base: str, token: str, path: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{base}{path}", data=data, method=method, headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return json.loads(text) if text else {}


async def execute(ws_url: str, token: str, code: str, timeout: float = 120) -> tuple[str, str]:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}))
    msg_id = uuid.uuid4().hex
    conn.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "username": "test",
                    "session": uuid.uuid4().hex,
                    "msg_type": "execute_request",
                    "version": "5.3",
                },
                "parent_header": {},
                "metadata": {},
                "content": {"code": code, "silent": False, "store_history": False},
                "channel": "shell",
            }
        )
    )
    output, status, idle = [], "", False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = await asyncio.wait_for(conn.read_message(), timeout=deadline - time.monotonic())
        if raw is None:
            break
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream":
            output.append(msg["content"]["text"])
        elif kind == "error":
            output.append("\n".join(msg["content"]["traceback"]))
        elif kind == "execute_reply":
            status = msg["content"]["status"]
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
        # the reply (shell) and the output (iopub) arrive in either order; iopub's "idle"
        # comes after all the output of this request
        if status and idle:
            break
    conn.close()
    return status, "".join(output)


def test_jupyterlab_serves_the_course() -> None:
    port, token = free_port(), secrets.token_hex(16)
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
            "--ip=127.0.0.1", f"--IdentityProvider.token={token}",
            f"--notebook-dir={config.NOTEBOOKS_DIR}", "--ServerApp.port_retries=0",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                api(base, token, "/api/status")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "JupyterLab did not answer within 90 s"
                time.sleep(0.5)
        listing = api(base, token, "/api/contents/")
        names = {item["name"] for item in listing["content"]}
        assert "00_course_overview.ipynb" in names
        assert {p.name for p in config.NOTEBOOKS_DIR.glob("*.ipynb")} <= names
        lab = urllib.request.urlopen(
            urllib.request.Request(f"{base}/lab", headers={"Authorization": f"token {token}"}), timeout=30
        )
        assert lab.status == 200

        kernel = api(base, token, "/api/kernels", "POST", {"name": "python3"})
        ws_url = f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels"
        status, output = asyncio.run(
            execute(ws_url, token, "import sys, utils; print(utils.config.PROJECT_ROOT, sys.executable)")
        )
        assert status == "ok", output
        assert str(config.PROJECT_ROOT) in output
        api(base, token, f"/api/kernels/{kernel['id']}", "DELETE")
        api(base, token, "/api/shutdown", "POST")
        server.wait(timeout=30)
    finally:
        stop_child(server)
        server.stderr.close()
    assert server.poll() is not None
    deadline = time.monotonic() + 10
    while not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert port_is_free(port), f"port {port} still in use after shutdown"
