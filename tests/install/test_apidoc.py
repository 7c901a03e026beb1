"""The documentation site builds from docs/ and the docstrings, with MkDocs
warnings as errors (python docs/build.py, as tox's docs env and `.ci/run
docs` run it), and its internal links and anchors all lead somewhere."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.unit
def test_site_builds_strict_with_no_broken_link(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path / "site"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "build.py"), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert ", 0 broken" in r.stdout, r.stdout[-2000:]
    options = (out / "python.html").read_text()
    assert "<table" in options and "<code>connect_timeout</code>" in options and "reconnect_time_wait" in options
    client = (out / "api" / "index.html").read_text()
    for name in ("subscribe", "publish", "request", "drain", "jetstream"):
        assert f'id="tclnats_py.aio.client.Client.{name}"' in client, name
    assert 'id="tclnats_py.aio.client.connect"' in client
    js = (out / "api" / "jetstream.html").read_text()
    for name in ("fetch_no_wait", "push_subscribe", "stream_info"):
        assert name in js, name
    # the engine is behind the internals page, not on the public API's pages
    assert 'id="tclnats_py.engine.connection.Engine"' not in client
    assert 'id="tclnats_py.engine.connection.Engine"' in (out / "api" / "internals.html").read_text()
