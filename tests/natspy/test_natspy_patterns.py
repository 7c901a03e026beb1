"""examples/natspy_patterns.py (twelve nats-py usage patterns) runs clean
against a real server."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "natspy_patterns.py")


def test_natspy_patterns_script(js_server):
    r = subprocess.run([sys.executable, SCRIPT, js_server.url], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(HERE))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.endswith(": ok")]
    assert [int(ln.split()[0]) for ln in lines] == list(range(1, 13)), r.stdout
    assert "Traceback" not in r.stderr, r.stderr
