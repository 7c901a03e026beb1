"""Waiting for a process of a compat test to listen."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest


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
