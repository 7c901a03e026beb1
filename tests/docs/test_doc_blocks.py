"""The code blocks of README.md and docs/ marked runnable run against a
throw-away nats-server.

A block is marked by an HTML comment on the line before its fence (invisible
on GitHub and on the site): ``<!-- runnable: KIND -->``, KIND one of
``python`` (run by this Python), ``natspy`` (``python -m tclnats_py.natspy``),
``tcl`` (stock /usr/bin/tclsh with only tclnats_py's Tcl folder on
TCLLIBPATH), ``spark`` (this Python, with Java and pyspark) or ``shell``
(bash); after the kind, ``expect="TEXT"`` names a line the block must print,
``file="NAME"`` the file the text around the block saves it as, and
``needs="java"`` a shell block that needs Java.  The address
``nats://localhost:4222`` in a block becomes the server's.

Each code block runs alone (a Spark block that a session runs, in the session
only).  The shell blocks of a page and its blocks with a ``file`` run
together, as a reader follows the page: one bash session, in document order,
in an empty folder (the quick starts make ``myapp/`` in it), each ``file``
block saved under its name in the session's current folder where it stands.
What the session does differently from the reader:

- the checkout (``'../tclnats_py[...]'`` of the quick starts,
  ``'/path/to/tclnats_py[...]'`` of the guides) is the wheel pip builds from
  it, built once per run (``pip wheel`` of a copy of this checkout) or, under
  ``.ci/run``, the one it built from the sdist (``TCLNATS_WHEEL``): the C
  extensions are compiled once, not once per page;
- ``sudo apt-get install PKG...`` checks that each package is installed
  (``dpkg -s``), or else that apt knows the name (``apt-cache show``: the
  line would install it), instead of installing it; any other ``sudo`` line
  is left out: a test does not become root;
- ``nats-server ... &`` listens on a free port of 127.0.0.1 (its address
  replaces ``nats://localhost:4222`` in the ``file`` blocks) with a JetStream
  folder of its own, and the next line waits until it accepts connections;
- without Java the session ends before the first ``needs="java"`` block and
  the test is reported skipped, with how far it got.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from typing import NamedTuple

import pytest

import tclnats_py
from tclnats_py.tclface import tcl_library_dir
from tclnats_py.testing import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = re.compile(r'^<!-- runnable: (\w+)((?: \w+="[^"]*")*) -->\n\s*```(\w+)\n(.*?)^```', re.M | re.S)
ATTR = re.compile(r' (\w+)="([^"]*)"')
KINDS = {"python": "python", "natspy": "python", "spark": "python", "tcl": "tcl", "shell": "bash"}
URL = "nats://localhost:4222"


class Block(NamedTuple):
    path: str                 # relative to the checkout
    line: int
    kind: str
    attrs: dict[str, str]     # expect, file, needs
    code: str


def doc_blocks() -> list[Block]:
    """Every runnable block of README.md and docs/, in document order."""
    paths = [os.path.join(ROOT, "README.md")]
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        paths += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    out = []
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for m in MARK.finditer(text):
            kind, attrs, lang, code = m.groups()
            assert KINDS.get(kind) == lang, f"{path}: a runnable {kind} block fenced as {lang}"
            attrs = dict(ATTR.findall(attrs))
            assert set(attrs) <= {"expect", "file", "needs"}, f"{path}: {attrs}"
            out.append(Block(os.path.relpath(path, ROOT), text.count("\n", 0, m.start()) + 1, kind, attrs, code))
    return out


BLOCKS = doc_blocks()
SESSIONS = sorted({b.path for b in BLOCKS if b.kind == "shell"})


@pytest.mark.unit
def test_the_quick_starts_are_runnable():
    kinds = {b.kind for b in BLOCKS if b.path == "README.md"}
    assert {"python", "natspy", "tcl", "spark", "shell"} <= kinds, kinds
    saved = {b.kind for b in BLOCKS if b.path == "README.md" and "file" in b.attrs}
    assert {"python", "natspy", "tcl", "spark"} <= saved, saved


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


def _alone(b: Block) -> bool:
    """Whether a block runs alone too: Spark's start takes most of a minute, so
    a Spark block that a shell session runs runs there only."""
    return b.kind != "shell" and not (b.kind == "spark" and "file" in b.attrs and b.path in SESSIONS)


@pytest.mark.parametrize("block", [pytest.param(b, marks=_marks(b.kind), id=f"{b.path}:{b.line}:{b.kind}")
                                   for b in BLOCKS if _alone(b)])
def test_doc_block_runs(block, fresh_server, tmp_path):
    path, line, kind, expect = block.path, block.line, block.kind, block.attrs.get("expect")
    if kind == "tcl" and not glob.glob(os.path.join(os.path.dirname(tclnats_py.__file__), "_tclload*.so")):
        pytest.skip("the Tcl extension (_tclload) is not built")
    script = tmp_path / ("block.tcl" if kind == "tcl" else "block.py")
    script.write_text(block.code.replace(URL, fresh_server.url))
    r = subprocess.run(_command(kind, str(script)), cwd=tmp_path, env=_env(kind), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300 if kind == "spark" else 60)
    assert r.returncode == 0, f"{path}:{line} ({kind}) exited {r.returncode}:\n{r.stdout}\n{r.stderr[-4000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-4000:]
    if expect:
        assert expect in r.stdout.splitlines(), f"{path}:{line}: no line {expect!r} in:\n{r.stdout}"


# -- the shell sessions ------------------------------------------------------------------------

_SESSION_HEAD = """set -euo pipefail
trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT
apt_installed() {   # what stands for `sudo apt-get install`: each package installed, or known to apt
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 && continue
        if apt-cache show "$p" >/dev/null 2>&1; then echo "session: $p is not installed here; apt knows it"
        else echo "session: no Debian package $p" >&2; exit 3; fi
    done
}
wait_port() {
    for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
    echo "session: nothing listens on port $1" >&2; exit 4
}
"""
_IGNORE = shutil.ignore_patterns(".git", "build", "dist", "site", "venv", ".tox", "*.egg-info", "__pycache__",
                                 ".mypy_cache", ".pytest_cache", "*.so")


def _shell_line(line: str, port: int, tmp: str, wheel: str) -> list[str]:
    """A shell block's line as the session runs it (see the module doc)."""
    words = line.split("#", 1)[0].split()
    if words[:3] == ["sudo", "apt-get", "install"]:
        return ["apt_installed " + " ".join(shlex.quote(w) for w in words[3:] if not w.startswith("-"))]
    if words[:1] == ["sudo"]:
        return [f"# left out (no root in a test): {line}"]
    line = line.replace("'../tclnats_py[", f"'{wheel}[").replace("'/path/to/tclnats_py[", f"'{wheel}[")
    if "nats-server" in words[0] and words[-1] == "&":
        server = line.split("#", 1)[0].rstrip()[:-1].rstrip()
        jsdir = shlex.quote(os.path.join(tmp, "jetstream"))
        return [f"{server} -a 127.0.0.1 -p {port} -sd {jsdir} &", f"wait_port {port}"]
    return [line]


def _session_script(blocks: list[Block], port: int, tmp: str, wheel: str) -> str:
    out = [_SESSION_HEAD]
    for b in blocks:
        out.append(f"echo \"-- session: {b.path}:{b.line} ({b.kind}) at $SECONDS s\"")
        if b.kind == "shell":
            for line in b.code.splitlines():
                out += _shell_line(line, port, tmp, wheel)
        elif "file" in b.attrs:
            out.append(f"cat > {shlex.quote(b.attrs['file'])} <<'TCLNATS_DOC_BLOCK_END'")
            out.append(b.code.replace(URL, f"nats://127.0.0.1:{port}").rstrip("\n"))
            out.append("TCLNATS_DOC_BLOCK_END")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def checkout_wheel(tmp_path_factory) -> str:
    """The wheel ``pip install CHECKOUT`` installs (see the module doc)."""
    wheel = os.environ.get("TCLNATS_WHEEL")
    if not wheel:
        tmp = tmp_path_factory.mktemp("wheel")
        shutil.copytree(ROOT, tmp / "tclnats_py", ignore=_IGNORE)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                        "-w", str(tmp / "dist"), str(tmp / "tclnats_py")], check=True, timeout=600)
        wheel, = glob.glob(str(tmp / "dist" / "tclnats_py-*.whl"))
    assert os.path.isfile(wheel) and "'" not in wheel, wheel
    return wheel


@pytest.mark.slow
@pytest.mark.parametrize("path", SESSIONS)
def test_doc_shell_session(path, checkout_wheel, tmp_path):
    """A page's shell blocks, as a reader runs them from a fresh folder (see the module doc)."""
    blocks = [b for b in BLOCKS if b.path == path and (b.kind == "shell" or "file" in b.attrs)]
    java_cut = None
    if not shutil.which("java"):
        java_cut = next((i for i, b in enumerate(blocks) if b.attrs.get("needs") == "java"), None)
        blocks = blocks[:java_cut]
    port = free_port()
    script = _session_script(blocks, port, str(tmp_path), checkout_wheel)
    (tmp_path / "session.sh").write_text(script)
    (tmp_path / "session").mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("TCLLIBPATH", "NATS_URL", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYSPARK_PYTHON")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"     # the CI machine's network, as for the Spark tests
    proc = subprocess.Popen(["bash", str(tmp_path / "session.sh")], cwd=tmp_path / "session", env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{path}: the session took over 900 s:\n{out[-6000:]}")
    assert proc.returncode == 0, f"{path}: the session exited {proc.returncode}:\n{out[-6000:]}\n{script}"
    assert "Traceback" not in out, out[-6000:]
    for b in blocks:
        if "expect" in b.attrs and "file" in b.attrs:
            assert b.attrs["expect"] in out.splitlines(), f"{path}:{b.line}: no line {b.attrs['expect']!r} in:\n{out}"
    if java_cut is not None:
        ran = f"up to line {blocks[-1].line}" if blocks else "nothing"
        pytest.skip(f"{path}: no java: the session ran {ran} and left out the rest")
