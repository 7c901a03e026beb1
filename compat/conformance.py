"""Conformance you can re-run: nats-tcl's own suites, v3.2.1 and v2.0.4,
unchanged, side by side under the original (stock tclsh), tclnats-tclsh and
stock tclsh + tclnats_py's extension, against real nats-servers; one dated
report.

    python -m tclnats_py.compat.conformance [--nats-tcl REPO] [--out DIR] [--tag TAG ...] [--websocket]
                                            [--keep-logs DIR]

REPO is a git repository of nats-tcl (a clone, or a bare mirror) that has
the tags; without ``--nats-tcl`` the environment variable TCLNATS_NATS_TCL
names it.  Each tag is exported with ``git archive`` and run by
:mod:`tclnats_py.compat.runner` (``tclnats-compat``), which prints which file
``package require nats`` loaded on each side and refuses a side that loads
the wrong package.  The report goes to DIR (default ``compat/results`` of a
source checkout, else the current folder): ``conformance-YYYY-MM-DD.md``,
with the counts per side, the tests whose outcome differs, and the runner's
JSON reports beside it.

With ``--websocket`` (default tag v3.2.1) only our sides run, their
connections over WebSocket (:mod:`tclnats_py.compat.ws_server`); the report
(``conformance-YYYY-MM-DD-ws.md``) lists the tests that cannot hold over
WebSocket with the reason, and the verdict counts the rest.

Exit status 0 when, for every tag, every side ran and every test the
original passes also passes on both of our sides (over WebSocket: every
test not listed passes on both); 1 otherwise; 2 when the run could not be
prepared (no repository given).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

from tclnats_py.compat import runner

TAGS = ("v3.2.1", "v2.0.4")
ENV = "TCLNATS_NATS_TCL"


def _default_out() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(here)
    if os.path.isfile(os.path.join(top, "setup.py")) and os.path.basename(here) == "compat":
        return os.path.join(here, "results")
    return os.getcwd()


def counts(report: dict) -> dict:
    """{side: (passed, total)} from a runner JSON report (skipped tests not counted in total)."""
    out = {}
    for name, side in report.get("sides", {}).items():
        if not side.get("available"):
            continue
        outcomes = [o for f in side["files"].values() for o in f["tests"].values()]
        ran = [o for o in outcomes if o != "SKIPPED"]
        out[name] = (sum(o == "PASSED" for o in ran), len(ran))
    return out


def verdict(report: dict) -> list:
    """What keeps a tag's run from conforming: a side that did not run,
    a problem (file error, time-out), a test the original passes that one of
    ours does not."""
    bad = [p for p in report.get("problems", [])]
    for side, tests in report.get("not_kept", {}).items():
        bad += [f"{side}: {t} passes on the original only" for t in tests]
    ws = report.get("websocket")
    if ws:  # no original to compare with: every test not listed as inherent counts
        bad += [f"{side}: {t} fails over WebSocket" for side, tests in report.get("failed", {}).items()
                for t in tests]
        bad += [f"{d['file']} {d['test']}: {d['sides'][0]} and {d['sides'][1]} differ" for d in report.get("differ", [])]
    for side in runner.OURS if ws else runner.SIDES:
        if not report.get("sides", {}).get(side, {}).get("available"):
            if not any(p.startswith(f"{side}:") for p in bad):
                bad.append(f"{side}: did not run")
    return bad


def _short(provider: str) -> str:
    """The runner's "which package answered" line without the original's
    whole ifneeded script: "other <script> <folder> (nats X)" -> "<folder> (nats X)"."""
    if provider.startswith("other ") and "}} " in provider:
        return "original: " + provider.rsplit("}} ", 1)[1]
    return provider


def markdown(date: str, reports: dict, machine: str) -> str:
    ws = " --websocket" if any(r.get("websocket") for r in reports.values()) else ""
    lines = [f"# nats-tcl conformance{' over WebSocket' if ws else ''}, {date}", "",
             f"Machine: {machine}. Command: `python -m tclnats_py.compat.conformance{ws}`.", ""]
    for tag, rep in reports.items():
        c = counts(rep)
        lines += [f"## {tag}", "",
                  f"nats-server: `{rep.get('nats_server', '?')}`; network namespace per side: "
                  f"{'yes' if rep.get('netns') else 'no'}", "",
                  "| side | passed | ran | loaded |", "| --- | ---: | ---: | --- |"]
        for side in runner.OURS if rep.get("websocket") else runner.SIDES:
            s = rep.get("sides", {}).get(side, {})
            if side in c:
                lines.append(f"| {side} | {c[side][0]} | {c[side][1]} | `{_short(s.get('provider', '?'))}` |")
            else:
                lines.append(f"| {side} | - | - | not run: {s.get('reason', '?')} |")
        differ = rep.get("differ", [])
        lines += ["", f"Tests whose outcome differs between sides: {len(differ)}"]
        for d in differ:
            a, b = d["sides"]
            lines.append(f"- {d['file']} {d['test']}: {a} {d[a]}, {b} {d[b]}")
        lines += _websocket_lines(rep) if rep.get("websocket") else []
        bad = verdict(rep)
        good = ("every test not listed passes over WebSocket on both of our sides" if rep.get("websocket")
                else "every test the original passes passes on both of our sides")
        lines += ["", "Verdict: " + (good if not bad else "NOT conforming: " + "; ".join(bad)), ""]
    return "\n".join(lines)


def _websocket_lines(rep: dict) -> list:
    """Over WebSocket: each file's counts per side, and the failures listed
    as inherent with their reasons (compat/ws_server.py INHERENT)."""
    names = [n for n in runner.OURS if rep.get("sides", {}).get(n, {}).get("available")]
    lines = ["", "| file | " + " | ".join(f"{n} passed | {n} failed" for n in names) + " |",
             "| --- |" + " ---: | ---: |" * len(names)]
    for f in sorted({f for n in names for f in rep["sides"][n]["files"]}):
        cells = [rep["sides"][n]["files"].get(f, {}) for n in names]
        lines.append(f"| {f} | " + " | ".join(f"{c.get('passed', '-')} | {c.get('failed', '-')}" for c in cells) + " |")
    for side, tests in rep.get("inherent_ws", {}).items():
        lines += ["", f"Failed on {side}, listed as unable to hold over WebSocket ({len(tests)}), not counted:"]
        lines += [f"- {t}: {why}" for t, why in tests]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nats-tcl", default=os.environ.get(ENV),
                    help=f"a git repository of nats-tcl with the tags (default: ${ENV})")
    ap.add_argument("--out", default=None, help="folder for the report (default: compat/results of a checkout)")
    ap.add_argument("--tag", action="append", default=None, help=f"tags to run (default: {' '.join(TAGS)})")
    ap.add_argument("--timeout", type=float, default=2400, help="seconds per side")
    ap.add_argument("--keep-logs", metavar="DIR", help="each side's tcltest output in DIR/<tag>/<side>.log")
    ap.add_argument("--websocket", action="store_true",
                    help="our sides only, over WebSocket (default tag v3.2.1; compat/ws_server.py)")
    args = ap.parse_args(argv)
    if not args.nats_tcl:
        print(f"tclnats_py.compat.conformance: give --nats-tcl REPO or set {ENV} to a git repository of "
              "nats-tcl (git clone https://github.com/Kazmirchuk/nats-tcl)", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out or _default_out())
    os.makedirs(out, exist_ok=True)
    date = datetime.date.today().isoformat()
    reports = {}
    failed = False
    ws = "-ws" if args.websocket else ""
    for tag in args.tag or (("v3.2.1",) if ws else TAGS):
        path = os.path.join(out, f"conformance-{date}-{tag}{ws}.json")
        print(f"== nats-tcl {tag}{' over WebSocket' if ws else ''}", flush=True)
        rc = runner.main([args.nats_tcl, "--tag", tag, "--json", path, "--timeout", str(args.timeout)]
                         + (["--websocket"] if ws else [])
                         + (["--keep-logs", os.path.join(args.keep_logs, tag)] if args.keep_logs else []))
        if rc == 2 or not os.path.exists(path):
            print(f"tclnats_py.compat.conformance: {tag} could not be prepared", file=sys.stderr)
            return 2
        with open(path, encoding="utf-8") as f:
            reports[tag] = json.load(f)
        failed |= bool(verdict(reports[tag]))
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, " \
              f"Tcl {_tcl_version()}; tclnats_py {_code()}"
    md = os.path.join(out, f"conformance-{date}{ws}.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(markdown(date, reports, machine))
    print(f"tclnats_py.compat.conformance: report {md}")
    for tag, rep in reports.items():
        c = counts(rep)
        print(f"{tag}: " + ", ".join(f"{s} {p}/{n}" for s, (p, n) in c.items())
              + ("" if not verdict(rep) else "  NOT conforming: " + "; ".join(verdict(rep))))
    return 1 if failed else 0


def _code() -> str:
    """tclnats_py's version, and the commit when it runs from a git checkout."""
    import tclnats_py
    top = os.path.dirname(os.path.dirname(os.path.abspath(tclnats_py.__file__)))
    try:
        r = subprocess.run(["git", "-C", top, "describe", "--always", "--dirty"], capture_output=True, text=True,
                           timeout=10)
    except OSError:
        r = None
    commit = r.stdout.strip() if r is not None and r.returncode == 0 else ""
    return tclnats_py.__version__ + (f" at commit {commit}" if commit else "")


def _tcl_version() -> str:
    try:
        r = subprocess.run(["tclsh"], input="puts [info patchlevel]", capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or "?"
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
