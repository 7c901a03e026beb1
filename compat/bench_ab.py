"""Old against new: two installed copies of tclnats_py measured in one run.

    python -m tclnats_py.compat.bench_ab --baseline OLD_PYTHON [--new NEW_PYTHON] [--rounds R]
                                         [--count N] [--face tcl|py|both] [--json out.json]

OLD_PYTHON and NEW_PYTHON are the ``python`` of two environments that each
have tclnats_py installed (a venv's ``bin/python``; NEW_PYTHON defaults to
the Python running this).  Both run the same workloads on one nats-server:
the Tcl face runs compat/bench_workload.tcl under stock ``tclsh`` with each
environment's ``TCLLIBPATH`` (what its ``tclnats-tclsh --env`` prints), and
the Python face runs compat/bench_py.py's workload (the asyncio face and the
nats-py API on it) in a child process of each Python, one round at a time.
The two sides take turns every round, the order swapped each round, and the
raw-socket ceiling (compat/bench_raw.py) takes its turn with them; each
figure is the median of the rounds.

Before measuring, each side prints which file ``import tclnats_py`` and
``package require nats`` load, and the run stops when a side loads the
other's copy or another package.  A failed or short figure makes the run
exit with status 1; the new/old ratios are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from tclnats_py.compat import bench, bench_raw

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_PY = os.path.join(HERE, "bench_py.py")
PY_SIDES = ("tclnats_py", "natspy")


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

    def check(self) -> None:
        """Print what this side loads; stop when it is not its own copy."""
        from tclnats_py.compat.runner import provider
        loaded = provider(self.tclsh, self.tcl_env)
        print(f"{self.label}: import tclnats_py -> {self.package}", flush=True)
        print(f"{self.label}: {self.tclsh} package require nats -> {loaded}", flush=True)
        root = os.path.dirname(self.package)
        if not loaded.startswith("tclnats_py ") or root not in loaded:
            raise SystemExit(f"bench_ab: {self.label} loads package nats from {loaded}, not from {root}")

    def tcl_round(self, url: str, count: int, monitor: str, tag: str) -> tuple[dict, list]:
        return bench.run_side([self.tclsh], self.tcl_env, url, count, [], 900, f"ab-pub-{tag}", monitor)

    def py_round(self, url: str, count: int, monitor: str) -> dict:
        r = subprocess.run([self.python, BENCH_PY, "--child-sides", ",".join(PY_SIDES), "--url", url,
                            "--count", str(count), "--rounds", "1", "--monitor", monitor],
                           capture_output=True, text=True, env=self.env, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"{self.label}: {r.stderr.strip()[-500:]}")
        runs = json.loads(r.stdout.strip().splitlines()[-1])
        return {f"{side}:{fig}": v[0] for side in PY_SIDES for fig, v in runs[side][0].items()}


def _median_of(rounds: list) -> dict:
    keys = {k for r in rounds for k in r}
    return {k: statistics.median(r[k] for r in rounds if k in r) for k in keys}


def _rows(face: str, names: list, med: dict, raw: dict) -> list:
    rows = []
    for key in names:
        old, new = med["old"].get(key), med["new"].get(key)
        if old is None and new is None:
            continue
        ceiling = raw.get(key.split(":")[-1])
        rows.append({"face": face, "figure": key, "old": old, "new": new,
                     "new_over_old": (new / old) if (old and new) else None, "raw_socket": ceiling})
    return rows


def _print(rows: list, count: int, rounds: int) -> None:
    print(f"{'face':<5}{'figure':<30}{'old':>12}{'new':>12}{'new/old':>9}{'raw socket':>12}  "
          f"(count={count}, median of {rounds} rounds; rates in msg/s, request: req/s)")
    for r in rows:
        o, n, q, c = r["old"], r["new"], r["new_over_old"], r["raw_socket"]
        verdict = "" if q is None else ("" if q >= 0.95 else f"  {100 * (1 - q):.1f}% slower")
        print(f"{r['face']:<5}{r['figure']:<30}{(f'{o:,.0f}' if o else '-'):>12}{(f'{n:,.0f}' if n else '-'):>12}"
              f"{(f'{q:.3f}' if q else '-'):>9}{(f'{c:,.0f}' if c else '-'):>12}{verdict}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the python of the environment with the old tclnats_py")
    ap.add_argument("--new", default=sys.executable, help="the python of the environment with the new one")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=50000)
    ap.add_argument("--face", choices=("tcl", "py", "both"), default="both")
    ap.add_argument("--tclsh", default="/usr/bin/tclsh")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    sides = {"old": Install("old", args.baseline, args.tclsh), "new": Install("new", args.new, args.tclsh)}
    if sides["old"].package == sides["new"].package:
        raise SystemExit(f"bench_ab: both sides import the same copy: {sides['old'].package}")
    for s in sides.values():
        s.check()
    faces = ("tcl", "py") if args.face == "both" else (args.face,)
    got: dict = {f: {"old": [], "new": []} for f in faces}
    raw_rounds: list = []
    failures: list = []
    store = tempfile.mkdtemp(prefix="tclnats-ab-")
    proc, url, monitor, _ws_url = bench.start_server(store)
    try:
        for r in range(max(1, args.rounds)):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for face in faces:
                for name in order:
                    if face == "tcl":
                        figs, failed = sides[name].tcl_round(url, args.count, monitor, f"{name}{r}")
                        failures.extend(f"{name} tcl, round {r + 1}: {f}" for f in failed)
                        got[face][name].append({k: v[0] for k, v in figs.items()})
                    else:
                        try:
                            got[face][name].append(sides[name].py_round(url, args.count, monitor))
                        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
                            failures.append(f"{name} py, round {r + 1}: {type(e).__name__}: {e}")
            figs, _each = bench_raw.ceiling(url, args.count, bench.FIGURES, tag=f"ab{r}")
            raw_rounds.append(figs)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(store, ignore_errors=True)
    raw = _median_of(raw_rounds)
    rows: list = []
    for face in faces:
        med = {name: _median_of(got[face][name]) for name in ("old", "new")}
        names = sorted(set(med["old"]) | set(med["new"]),
                       key=lambda k: (k.split(":")[0], k.split(":")[-1]))
        rows += _rows(face, names, med, raw)
    _print(rows, args.count, args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": args.count, "rounds": args.rounds, "old": sides["old"].package,
                       "new": sides["new"].package, "rows": rows, "raw_rounds": raw_rounds, "runs": got,
                       "failures": failures}, f, indent=2)
    return bench_raw.exit_status("tclnats_py.compat.bench_ab", failures)


if __name__ == "__main__":
    sys.exit(main())
