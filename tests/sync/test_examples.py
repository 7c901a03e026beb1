"""The blocking face's examples run against a real server: examples/sync_script.py
as a program, examples/sync_wsgi.py's WSGI app served by wsgiref and asked over HTTP
from several threads at once."""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from tclnats_py import sync

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sync_script(nats_server):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, str(EXAMPLES / "sync_script.py"), nats_server.url], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "ok"
    assert "answers: alpha=ALPHA, beta=BETA, gamma=GAMMA" in r.stdout


def test_sync_wsgi_app(nats_server):
    mod = load("sync_wsgi")
    svc = mod.start_service(nats_server.url)
    nc = sync.connect(nats_server.url)
    httpd = mod.make_server("127.0.0.1", 0, mod.make_app(nc), server_class=mod.ThreadingWSGIServer)
    server = threading.Thread(target=httpd.serve_forever, daemon=True)
    server.start()
    base = f"http://127.0.0.1:{httpd.server_port}"
    try:
        results = {}

        def get(name):
            with urllib.request.urlopen(f"{base}/greet?name={name}", timeout=10) as r:
                results[name] = (r.status, r.read())

        names = [f"n{i}" for i in range(12)]
        ts = [threading.Thread(target=get, args=(n,)) for n in names]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert results == {n: (200, f"Hello, {n}!\n".encode()) for n in names}
        svc.close()  # nobody answers now: 503 from ErrNoResponders
        try:
            urllib.request.urlopen(f"{base}/greet?name=x", timeout=10)
            raise AssertionError("503 expected")
        except urllib.error.HTTPError as e:
            assert e.code == 503 and json.loads(e.read())["error"] == "no greeter is running"
    finally:
        httpd.shutdown()
        httpd.server_close()
        nc.close()
        svc.close()
