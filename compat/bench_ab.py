"""Old against new: two installed copies of tclnats_py measured in one run.

    python -m tclnats_py.compat.bench_ab --baseline OLD_PYTHON [--new NEW_PYTHON] [--rounds R]
                                         [--count N] [--face tcl|py|both] [--rows a,b] [--json out.json]

OLD_PYTHON and NEW_PYTHON are the ``python`` of two environments that each
have tclnats_py installed (a venv's ``bin/python``; NEW_PYTHON defaults to
the Python running this).  Both run the same workloads on one nats-server:
the Tcl face runs compat/bench_workload.tcl under stock ``tclsh`` with each
environment's ``TCLLIBPATH`` (what its ``tclnats-tclsh --env`` prints), and
the Python face runs compat/bench_py.py's workload (the asyncio face and the
nats-py API on it) in child processes of each Python.
The two sides take turns figure by figure: a round measures each group of
figures on the old side and at once on the new one, the order swapped
from one group to the next and from one round to the next, and the
raw-socket ceiling (compat/bench_raw.py) takes its turn at the end of the
round; each figure is the median of the rounds.  A group is the Python
face's publish with deliver, request with request_async, js_publish with
js_publish_async, fetch, or kv_put with kv_get, for the asyncio face and
nats-py's API on it separately, each run by a process of that side kept
for the whole run (bench_py.py ``--serve``: no start-up between the two
sides' turns); or one of the Tcl face's figures (kv_put with kv_get), a
tclsh run each time.  Every request row of both sides talks to one echo
responder.

So each round gives one paired new/old ratio per figure, measured seconds
apart; the table's ``new/old`` is the median of those paired ratios and
``spread`` their quartiles, which drift of the machine (its speed can
halve for a while) moves far less than the ratio of the two medians.  The
Python face also reports each side's CPU microseconds per message (the
client process's ``time.process_time``).  Rounds must last long enough to
be measured: at the default count a publish figure takes about 0.4 s, a
request figure (count/50 round trips) about 1.5 s.  An A/A run (the same
build installed twice, e.g. a copied venv) shows this machine's noise.
``--rows request,fetch`` measures the groups of those figures only (in
each face that has them), so that rows a whole run left in doubt can be
measured again with more rounds in less time.

Before measuring, each side prints which file ``import tclnats_py`` and
``package require nats`` load, and the run stops when a side loads the
other's copy or another package.  A failed or short figure makes the run
exit with status 1; the new/old ratios are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile

from tclnats_py.compat import bench, bench_raw

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_PY = os.path.join(HERE, "bench_py.py")
PY_SIDES = ("tclnats_py", "natspy")
#: the figures one process of a side measures together, for each face
UNITS = {"py": (("publish", "deliver"), ("request", "request_async"), ("js_publish", "js_publish_async"),
                ("fetch",), ("kv_put", "kv_get")),
         "tcl": (("publish",), ("deliver",), ("request",), ("js_publish",), ("fetch",), ("kv_put", "kv_get"))}


def turns(face: str, wanted: list) -> list:
    """One round's turns of ``face``: (Python side or None, figures), each
    measured by the old and the new install back to back; only the groups
    holding a figure of ``wanted`` (every group when it is empty)."""
    groups = [list(g) for g in UNITS[face] if not wanted or any(f in wanted for f in g)]
    if face == "tcl":
        return [(None, g) for g in groups]
    return [(side, g) for g in groups for side in PY_SIDES]


class Install:
    """One installed tclnats_py: its Python, package folder and Tcl environment."""

    def __init__(self, label: str, python: str, tclsh: str):
        self.label = label
        self.python = os.path.abspath(python)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TCLLIBPATH")}
        self.env = env
        out = subprocess.run([self.python, "-c", "import os, tclnats_py; print(os.path.dirname(tclnats_py.__file__))"],
                             capture_output=True, text=True, env=env, timeout=60)
        if out.returncode != 0:
            raise SystemExit(f"bench_ab: {label}: {self.python} cannot import tclnats_py: {out.stderr.strip()[-300:]}")
        self.package = out.stdout.strip()
        launcher = os.path.join(os.path.dirname(self.python), "tclnats-tclsh")
        line = subprocess.run([launcher, "--env"], capture_output=True, text=True, env=env, timeout=60).stdout
        libpath = line.strip().partition("TCLLIBPATH=")[2]
        if not libpath:
            raise SystemExit(f"bench_ab: {label}: {launcher} --env printed no TCLLIBPATH: {line!r}")
        self.tcl_env = dict(env, TCLLIBPATH=libpath)
        self.tclsh = shutil.which(tclsh) or tclsh
        self.servers: dict = {}  # Python side -> its serving process (bench_py.serve)

    def check(self) -> None:
        """Print what this side loads; stop when it is not its own copy."""
        from tclnats_py.compat.runner import provider
        loaded = provider(self.tclsh, self.tcl_env)
        print(f"{self.label}: import tclnats_py -> {self.package}", flush=True)
        print(f"{self.label}: {self.tclsh} package require nats -> {loaded}", flush=True)
        root = os.path.dirname(self.package)
        if not loaded.startswith("tclnats_py ") or root not in loaded:
            raise SystemExit(f"bench_ab: {self.label} loads package nats from {loaded}, not from {root}")

    def tcl_turn(self, url: str, count: int, monitor: str, tag: str, rows: list) -> tuple[dict, list]:
        figs, failed = bench.run_side([self.tclsh], self.tcl_env, url, count, rows, 900, f"ab-pub-{tag}",
                                      monitor)
        return {k: v[0] for k, v in figs.items()}, failed

    def py_turn(self, url: str, count: int, monitor: str, echo: str, side: str, rows: list) -> tuple[dict, list]:
        """``rows`` of Python side ``side``, run once by its serving process
        (bench_py.serve, started at the first turn and kept)."""
        what = f"{side} {','.join(rows)}"
        proc = self.servers.get(side)
        if proc is None or proc.poll() is not None:
            proc = self.servers[side] = subprocess.Popen(
                [self.python, BENCH_PY, "--serve", side, "--url", url, "--monitor", monitor, "--echo", echo],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=self.env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"rows": rows, "count": count}) + "\n")
        proc.stdin.flush()
        if not select.select([proc.stdout], [], [], 900)[0]:
            proc.kill()
            return {}, [f"{what}: no answer in 900 s"]
        line = proc.stdout.readline()
        try:
            answer = json.loads(line)
        except ValueError:
            return {}, [f"{what}: the serving process ended or said {line[-300:]!r} (exit status {proc.poll()})"]
        if "error" in answer:
            return {}, [f"{what}: {answer['error']}"]
        return {f"{side}:{fig}": (v[0], v[1]) for fig, v in answer["figures"].items()}, []

    def stop(self) -> None:
        for proc in self.servers.values():
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.servers.clear()


def _median_of(rounds: list, at: int = 0) -> dict:
    """{figure: median over the rounds} of the figures' element ``at`` (0 the
    rate, 1 the CPU microseconds per message where the side gives them)."""
    keys = {k for r in rounds for k in r}
    return {k: statistics.median(_part(r[k], at) for r in rounds if k in r and _part(r[k], at) is not None)
            for k in keys if any(k in r and _part(r[k], at) is not None for r in rounds)}


def _part(value, at: int):
    if isinstance(value, (tuple, list)):
        return value[at] if len(value) > at else None
    return value if at == 0 else None


def _paired(old_rounds: list, new_rounds: list, key: str) -> list:
    """new/old of ``key``'s rate in each round where both sides gave it."""
    return [_part(n[key], 0) / _part(o[key], 0) for o, n in zip(old_rounds, new_rounds)
            if key in o and key in n and _part(o[key], 0)]


def _rows(face: str, names: list, runs: dict, raw: dict) -> list:
    med = {name: _median_of(runs[name]) for name in ("old", "new")}
    cpu = {name: _median_of(runs[name], 1) for name in ("old", "new")}
    rows = []
    for key in names:
        old, new = med["old"].get(key), med["new"].get(key)
        if old is None and new is None:
            continue
        ratios = _paired(runs["old"], runs["new"], key)
        q1 = q3 = None
        if len(ratios) >= 2:
            q1, _q2, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
        rows.append({"face": face, "figure": key, "old": old, "new": new,
                     "new_over_old": statistics.median(ratios) if ratios else None, "q1": q1, "q3": q3,
                     "cpu_us_old": cpu["old"].get(key), "cpu_us_new": cpu["new"].get(key),
                     "raw_socket": raw.get(key.split(":")[-1])})
    return rows


def _num(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _print(rows: list, count: int, rounds: int) -> None:
    print(f"{'face':<5}{'figure':<30}{'old':>12}{'new':>12}{'new/old':>9}{'spread':>13}{'cpu us old>new':>16}"
          f"{'raw socket':>12}  (count={count}, medians of {rounds} rounds; rates in msg/s, request: req/s; "
          f"new/old: median of the paired ratios, spread: their quartiles)")
    for r in rows:
        q = r["new_over_old"]
        verdict = "" if q is None or q >= 0.95 else f"  {100 * (1 - q):.1f}% slower"
        if verdict and r["q3"] is not None and r["q3"] >= 1.0:
            verdict += " (spread reaches 1)"
        spread = "-" if r["q1"] is None else f"{r['q1']:.2f}-{r['q3']:.2f}"
        cpu = "-" if r["cpu_us_old"] is None else f"{r['cpu_us_old']:.2f}>{_num(r['cpu_us_new'], '.2f')}"
        print(f"{r['face']:<5}{r['figure']:<30}{_num(r['old'], ',.0f'):>12}{_num(r['new'], ',.0f'):>12}"
              f"{_num(q, '.3f'):>9}{spread:>13}{cpu:>16}{_num(r['raw_socket'], ',.0f'):>12}{verdict}")


def _measure(args, sides: dict, faces: tuple, wanted: list, url: str, monitor: str,
             echo: str) -> tuple[dict, list, list]:
    """Every round: each turn of each face by both sides back to back, then
    the raw-socket ceiling; ({face: {side: [round's figures]}}, [ceiling's
    figures of each round], [what failed])."""
    got: dict = {f: {"old": [], "new": []} for f in faces}
    raw_rounds: list = []
    failures: list = []
    for r in range(max(1, args.rounds)):
        for face in faces:
            for name in ("old", "new"):
                got[face][name].append({})  # the round's figures, filled turn by turn
            for i, (side, rows) in enumerate(turns(face, wanted)):
                for name in (("old", "new") if (r + i) % 2 == 0 else ("new", "old")):
                    if face == "tcl":
                        figs, failed = sides[name].tcl_turn(url, args.count, monitor, f"{name}{r}", rows)
                    else:
                        figs, failed = sides[name].py_turn(url, args.count, monitor, echo, side, rows)
                    # a failed turn leaves its figures out of this round: its pair is dropped
                    failures.extend(f"{name} {face}, round {r + 1}: {f}" for f in failed)
                    got[face][name][-1].update(figs)
        figs, _each = bench_raw.ceiling(url, args.count, wanted or bench.FIGURES, tag=f"ab{r}", echo=echo)
        raw_rounds.append(figs)
    return got, raw_rounds, failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the python of the environment with the old tclnats_py")
    ap.add_argument("--new", default=sys.executable, help="the python of the environment with the new one")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=500000)
    ap.add_argument("--face", choices=("tcl", "py", "both"), default="both")
    ap.add_argument("--tclsh", default="/usr/bin/tclsh")
    ap.add_argument("--rows", default="", help=f"these figures only, comma-separated (of {','.join(bench_raw.FIGURES)})")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    wanted = [r for r in args.rows.split(",") if r]
    unknown = set(wanted) - set(bench_raw.FIGURES)
    if unknown:
        ap.error(f"--rows: no such figure {', '.join(sorted(unknown))} (figures: {', '.join(bench_raw.FIGURES)})")
    sides = {"old": Install("old", args.baseline, args.tclsh), "new": Install("new", args.new, args.tclsh)}
    if sides["old"].package == sides["new"].package:
        raise SystemExit(f"bench_ab: both sides import the same copy: {sides['old'].package}")
    for s in sides.values():
        s.check()
    faces: tuple = ("tcl", "py") if args.face == "both" else (args.face,)
    if wanted and not turns("tcl", wanted):  # (the Python face's own figures only)
        faces = tuple(f for f in faces if f != "tcl")
    store = tempfile.mkdtemp(prefix="tclnats-ab-")
    proc, url, monitor, _ws_url = bench.start_server(store)
    try:
        # every request row of both sides, and the ceiling's, talks to this one responder
        with bench_raw.EchoResponder(url) as echo:
            got, raw_rounds, failures = _measure(args, sides, faces, wanted, url, monitor, echo)
    finally:
        for s in sides.values():
            s.stop()
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(store, ignore_errors=True)
    raw = _median_of(raw_rounds)
    rows: list = []
    for face in faces:
        names = sorted({k for name in ("old", "new") for rnd in got[face][name] for k in rnd},
                       key=lambda k: (k.split(":")[0], k.split(":")[-1]))
        rows += _rows(face, names, got[face], raw)
    _print(rows, args.count, args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": args.count, "rounds": args.rounds, "old": sides["old"].package,
                       "new": sides["new"].package, "rows": rows, "raw_rounds": raw_rounds, "runs": got,
                       "failures": failures}, f, indent=2)
    return bench_raw.exit_status("tclnats_py.compat.bench_ab", failures)


if __name__ == "__main__":
    sys.exit(main())
