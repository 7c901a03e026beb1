"""Peak memory (RSS) of a subscriber with a backlog of N messages (default 1,000,000).

    python -m tclnats_py.compat.bench_memory --nats-tcl PATH [--count N] [--json out.json] [--short]

One nats-server (from the wheel, max_pending raised so that it keeps a slow
subscriber), four subscriber processes in turn: the original nats-tcl under
tclsh, tclnats-tclsh, tclnats_py's asyncio API and nats-py.  The harness
publishes N 128-byte messages with tclnats_py, and each subscriber's peak RSS
(VmHWM from /proc) is read when it has handled them all.

The backlog sits where each design keeps it:
- Python clients read messages into their subscription's queue while the
  callback is stuck on its first message; the subscriber reports when all N
  are pending in the client (the figure measured: N messages pending
  in a slow subscriber), then lets the callback go;
- a Tcl client runs its callbacks in the thread that reads the socket, so
  while the first callback is stuck nothing is read: the backlog waits in
  nats-server and the kernel, and the figure is the peak while the client then
  works through N messages as fast as it can read them.

Prints a table (MB, and the ratio peer / tclnats_py: above 1 means tclnats_py
uses less) and writes JSON with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOAD = b"x" * 128

TCL_SUB = r"""
package require nats
lassign $argv url count
set c [nats::connection new memsub]
$c configure -servers $url
$c connect
set ::n 0
proc cb {s m r} {
    if {[incr ::n] == 1} {
        # the slow part: stuck until the harness has published everything
        puts first; flush stdout
        gets stdin
    }
    if {$::n == $::count} { set ::done 1 }
}
$c subscribe mem.x -callback cb
$c ping
puts ready; flush stdout
vwait ::done
puts done; flush stdout
gets stdin
$c destroy
exit 0
"""

PY_SUB = r"""
import asyncio, sys
url, count, lib = sys.argv[1], int(sys.argv[2]), sys.argv[3]

async def main():
    if lib == "tclnats_py":
        import tclnats_py
        nc = await tclnats_py.connect(url)
    else:
        import nats
        nc = await nats.connect(url)
    gate = asyncio.Event()
    done = asyncio.Event()
    n = 0

    async def cb(msg):
        nonlocal n
        n += 1
        if n == 1:
            await gate.wait()
        if n == count:
            done.set()
    sub = await nc.subscribe("mem.x", cb=cb, pending_msgs_limit=count + 10,
                             pending_bytes_limit=(count + 10) * 1024)
    await nc.flush()
    print("ready", flush=True)
    # let the callback go once the whole backlog is pending in this client
    while sub.pending_msgs < count - 1:
        await asyncio.sleep(0.05)
    print("pending", sub.pending_msgs, flush=True)
    gate.set()
    await done.wait()
    print("done", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await nc.close()

asyncio.run(main())
"""


def _hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def _publish(url: str, count: int) -> None:
    import tclnats_py
    nc = await tclnats_py.connect(url)
    for i in range(count):
        nc.publish("mem.x", PAYLOAD)
        if i % 10000 == 9999:
            await nc.flush()
    await nc.flush()
    await nc.close()


def run_side(name: str, cmd: list, env: dict, url: str, count: int, tcl: bool) -> dict:
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
        t0 = time.perf_counter()
        asyncio.run(_publish(url, count))
        if tcl:
            assert p.stdout.readline().strip() == "first"
            p.stdin.write("go\n")
            p.stdin.flush()
        else:
            line = p.stdout.readline().split()
            assert line and line[0] == "pending", line
        assert p.stdout.readline().strip() == "done"
        elapsed = time.perf_counter() - t0
        mb = _hwm_mb(p.pid)
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait(60)
        return {"peak_rss_mb": mb, "seconds": elapsed}
    finally:
        if p.poll() is None:
            p.kill()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nats-tcl", help="a nats-tcl checkout (the original, under tclsh)")
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--short", action="store_true", help="100,000 messages")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    count = 100_000 if args.short else args.count
    from tclnats_py.testing.server import NatsServer
    work = tempfile.mkdtemp(prefix="tclnats-mem-")
    tcl_script = os.path.join(work, "sub.tcl")
    py_script = os.path.join(work, "sub.py")
    with open(tcl_script, "w") as f:
        f.write(TCL_SUB)
    with open(py_script, "w") as f:
        f.write(textwrap.dedent(PY_SUB))
    results = {}
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    # the server keeps a stuck subscriber's backlog instead of dropping it as slow
    with NatsServer(config="max_pending: 2GB\nwrite_deadline: \"120s\"\n") as srv:
        sides = []
        if args.nats_tcl:
            sides.append(("nats-tcl (tclsh)", ["tclsh", tcl_script, srv.url, str(count)],
                          dict(env, TCLLIBPATH=os.path.abspath(args.nats_tcl)), True))
        sides.append(("tclnats-tclsh", ["tclnats-tclsh", tcl_script, srv.url, str(count)], env, True))
        sides.append(("tclnats_py asyncio", [sys.executable, py_script, srv.url, str(count), "tclnats_py"], env,
                      False))
        sides.append(("nats-py", [sys.executable, py_script, srv.url, str(count), "nats-py"], env, False))
        for name, cmd, side_env, tcl in sides:
            results[name] = run_side(name, cmd, side_env, srv.url, count, tcl)
            print(f"  {name}: {results[name]['peak_rss_mb']:.0f} MB, {results[name]['seconds']:.1f} s",
                  flush=True)
    pairs = [("nats-tcl (tclsh)", "tclnats-tclsh"), ("nats-py", "tclnats_py asyncio")]
    print(f"\npeak RSS with a backlog of {count:,} 128-byte messages")
    print(f"{'process':<22}{'peak RSS':>12}{'seconds':>10}")
    for name, r in results.items():
        print(f"{name:<22}{r['peak_rss_mb']:>9.0f} MB{r['seconds']:>10.1f}")
    table = []
    for peer, ours in pairs:
        if peer in results and ours in results:
            ratio = results[peer]["peak_rss_mb"] / results[ours]["peak_rss_mb"]
            table.append({"peer": peer, "ours": ours, "peer_mb": results[peer]["peak_rss_mb"],
                          "ours_mb": results[ours]["peak_rss_mb"], "ratio": ratio})
            print(f"{peer} / {ours}: {ratio:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": count, "results": results, "ratios": table}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
