"""The API reference builds from the docstrings: the
command of tox's docs env, with the connect options as one table."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _docs_command():
    text = open(os.path.join(ROOT, "tox.ini"), encoding="utf-8").read()
    section = text[text.index("[testenv:docs]"):]
    line = next(ln for ln in section.splitlines() if ln.startswith("commands = "))
    return line[len("commands = "):].split()


@pytest.mark.unit
def test_api_reference_builds(tmp_path):
    cmd = [sys.executable if a == "python" else str(tmp_path / "apidoc") if a == "{toxworkdir}/apidoc" else a
           for a in _docs_command()]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    options = (tmp_path / "apidoc" / "tclnats_py" / "aio" / "options.html").read_text()
    assert "<table" in options and "<code>connect_timeout</code>" in options and "reconnect_time_wait" in options
    client = (tmp_path / "apidoc" / "tclnats_py" / "aio.html").read_text()
    for name in ("subscribe", "publish", "request", "drain", "jetstream"):
        assert f"Client.{name}" in client or f"id=\"Client.{name}\"" in client, name
    js = (tmp_path / "apidoc" / "tclnats_py" / "aio" / "jetstream.html").read_text()
    for name in ("fetch_no_wait", "push_subscribe", "stream_info"):
        assert name in js, name
