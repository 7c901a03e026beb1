"""The code blocks of README.md and docs/ marked runnable run against a
throw-away nats-server.

A block is marked by an HTML comment on the line before its fence (invisible
on GitHub and on the site): ``<!-- runnable: KIND -->``, KIND one of
``python`` (run by this Python), ``natspy`` (``python -m tclnats_py.natspy``),
``tcl`` (stock /usr/bin/tclsh with only tclnats_py's Tcl folder on
TCLLIBPATH) or ``spark`` (this Python, with Java and pyspark); ``expect="TEXT"``
after the kind names a line the block must print.  The address
``nats://localhost:4222`` in a block becomes the server's.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

import tclnats_py
from tclnats_py.tclface import tcl_library_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = re.compile(r'^<!-- runnable: (\w+)(?: expect="([^"]*)")? -->\n\s*```(\w+)\n(.*?)^```', re.M | re.S)
KINDS = {"python": "python", "natspy": "python", "spark": "python", "tcl": "tcl"}


def doc_blocks() -> list[tuple[str, int, str, str | None, str]]:
    """(file, line, kind, expected line, code) of every runnable block."""
    paths = [os.path.join(ROOT, "README.md")]
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        paths += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    out = []
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for m in MARK.finditer(text):
            kind, expect, lang, code = m.groups()
            assert KINDS.get(kind) == lang, f"{path}: a runnable {kind} block fenced as {lang}"
            out.append((os.path.relpath(path, ROOT), text.count("\n", 0, m.start()) + 1, kind, expect, code))
    return out


BLOCKS = doc_blocks()


@pytest.mark.unit
def test_the_quick_starts_are_runnable():
    kinds = {kind for path, _, kind, _, _ in BLOCKS if path == "README.md"}
    assert {"python", "natspy", "tcl", "spark"} <= kinds, kinds


def _command(kind: str, script: str) -> list[str]:
    if kind == "tcl":
        tclsh = "/usr/bin/tclsh" if os.path.exists("/usr/bin/tclsh") else shutil.which("tclsh")
        if not tclsh:
            pytest.skip("no tclsh")
        return [tclsh, script]
    if kind == "natspy":
        return [sys.executable, "-m", "tclnats_py.natspy", script]
    if kind == "spark":
        pytest.importorskip("pyspark")
        pytest.importorskip("pyarrow")
        if not shutil.which("java"):
            pytest.skip("no java for Spark")
    return [sys.executable, script]


def _env(kind: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TCLLIBPATH", "NATS_URL")}
    if kind == "tcl":
        env["TCLLIBPATH"] = tcl_library_dir()
    if kind == "spark":
        env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    return env


def _marks(kind: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.tcl] if kind == "tcl" else [pytest.mark.spark, pytest.mark.slow] if kind == "spark" else []


@pytest.mark.parametrize("path,line,kind,expect,code",
                         [pytest.param(*b, marks=_marks(b[2]), id=f"{b[0]}:{b[1]}:{b[2]}") for b in BLOCKS])
def test_doc_block_runs(path, line, kind, expect, code, fresh_server, tmp_path):
    if kind == "tcl" and not glob.glob(os.path.join(os.path.dirname(tclnats_py.__file__), "_tclload*.so")):
        pytest.skip("the Tcl extension (_tclload) is not built")
    script = tmp_path / ("block.tcl" if kind == "tcl" else "block.py")
    script.write_text(code.replace("nats://localhost:4222", fresh_server.url))
    r = subprocess.run(_command(kind, str(script)), cwd=tmp_path, env=_env(kind), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300 if kind == "spark" else 60)
    assert r.returncode == 0, f"{path}:{line} ({kind}) exited {r.returncode}:\n{r.stdout}\n{r.stderr[-4000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-4000:]
    if expect:
        assert expect in r.stdout.splitlines(), f"{path}:{line}: no line {expect!r} in:\n{r.stdout}"
