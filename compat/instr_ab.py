"""Instructions per message of two installs of tclnats_py, counted by
callgrind: a benchmark that other processes on the machine do not disturb.

    python -m tclnats_py.compat.instr_ab --old /tmp/venv-old/bin/python \\
        [--new python3 --new-path /work/wt/perf] [--counts 2000 10000] [--ws] [SCENARIO ...]

Each scenario is one hot path of compat/bench.py or compat/bench_py.py (the
asyncio face's publish and delivery, natspy's, the blocking face's, the Tcl
face's, a JetStream fetch, the parser fed in memory; as floors, the
raw-socket publisher and compat/bench_raw.py's blocking socket client for
the blocking face's round trips: ``raw_*``, which need a nats:// URL), run
for two message counts in a fresh process under ``valgrind
--tool=callgrind``; the difference of the two
totals over the difference of the counts is the cost of one message, start-up
and connection excluded.  Only the client process is counted (the
nats-server, started once here, runs outside valgrind).  The Tcl scenarios
run stock tclsh with the install's Tcl folder on TCLLIBPATH, as
tclnats-tclsh does.  ``--ws``: every connection goes through the server's
websocket listener (a ws:// URL) instead.  The printed ratio is new over old: below 1 the new
install does less work per message.

Each scenario runs once outside valgrind first, so that compiling byte
code (a fresh checkout's first import) is not counted; PYTHONHASHSEED is
fixed.  The spin before a wait (TCLNATS_SPIN_US) polls for a time, not a number of
times, so it is set to 0 on both sides unless ``--spin`` is given.  An
interpreter that is not the one tclnats_py was installed into takes the
package from ``--old-path`` / ``--new-path`` (PYTHONPATH); every process
runs in an empty temporary folder, so the current one is not imported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

_PY_HEAD = """\
import asyncio, sys
N, URL, ECHO = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PAYLOAD = b"x" * 128
"""

# each Python scenario: the body of ``async def main()`` (N, URL, PAYLOAD defined)
_PY = {
    "aio_publish": """\
import tclnats_py
a = await tclnats_py.connect(URL)
publish = a.publish
for _ in range(N):
    await publish("ia.pub", PAYLOAD)
await a.flush()
await a.close()
""",
    "aio_deliver": """\
import tclnats_py
a = await tclnats_py.connect(URL)
b = await tclnats_py.connect(URL)
done = asyncio.get_running_loop().create_future()
got = 0
async def on_msg(msg):
    nonlocal got
    got += 1
    if got == N:
        done.set_result(None)
await b.subscribe("ia.deliver", cb=on_msg)
await b.flush()
publish = a.publish
for _ in range(N):
    await publish("ia.deliver", PAYLOAD)
await a.flush()
await asyncio.wait_for(done, 600)
await a.close()
await b.close()
""",
    "aio_fetch": """\
import tclnats_py
a = await tclnats_py.connect(URL)
js = a.jetstream()
stream = "IA_" + str(N)
try:
    await js.delete_stream(stream)
except Exception:
    pass
await js.create_stream(stream, subjects=["iaf." + str(N)], storage="memory")
for _ in range(N):
    await a.publish("iaf." + str(N), PAYLOAD)
await a.flush()
cons = await js.create_consumer(stream, durable_name="PULL", ack_policy="none")
got = 0
while got < N:
    got += len(await cons.fetch(500, max_wait=60))
await js.delete_stream(stream)
await a.close()
""",
    "aio_request": """\
import tclnats_py
a = await tclnats_py.connect(URL)
request = a.request
for _ in range(N):
    await request(ECHO, PAYLOAD, timeout=5)
await a.close()
""",
    "natspy_fetch": """\
from tclnats_py import natspy
from tclnats_py.natspy.js import api
a = await natspy.connect(URL)
js = a.jetstream()
stream = "IN_" + str(N)
try:
    await js.delete_stream(stream)
except Exception:
    pass
await js.add_stream(name=stream, subjects=["inf." + str(N)], storage=api.StorageType.MEMORY)
for _ in range(N):
    await a.publish("inf." + str(N), PAYLOAD)
await a.flush()
psub = await js.pull_subscribe("inf." + str(N), durable="PULL", stream=stream,
                               config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE))
got = 0
while got < N:
    got += len(await psub.fetch(500, timeout=60))
await js.delete_stream(stream)
await a.close()
""",
}


def _as_natspy(body: str) -> str:
    """An asyncio-face scenario through the nats-py surface (its connect)."""
    return body.replace("import tclnats_py\n", "from tclnats_py import natspy\n").replace(
        "tclnats_py.connect(", "natspy.connect(")


# the publish, delivery and request scenarios again through natspy, in the same order
_PY = {**{k: v for k, v in _PY.items() if k.startswith("aio_") and k != "aio_fetch"},
       **{"natspy_" + k[4:]: _as_natspy(v) for k, v in _PY.items()
          if k in ("aio_publish", "aio_deliver", "aio_request")},
       **{k: v for k, v in _PY.items() if k.endswith("_fetch")}}

_SYNC_HEAD = """\
import sys
import tclnats_py.sync
N, URL, ECHO = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PAYLOAD = b"x" * 128
a = tclnats_py.sync.connect(URL)
"""

# a fresh memory bucket ``kv`` of the blocking face (a connected), named with ``prefix``
_SYNC_BUCKET = """\
js = a.jetstream()
bucket = "{prefix}" + str(N)
try:
    js.delete_key_value(bucket)
except Exception:
    pass
kv = js.create_key_value(bucket, storage="memory")
"""

# the blocking face: a program after _SYNC_HEAD (a connected); a request
# waits for its reply before the next one goes (the echo responder answers)
_SYNC = {
    "sync_publish": """\
publish = a.publish
for _ in range(N):
    publish("is.pub", PAYLOAD)
a.flush(30)
""",
    "sync_deliver": """\
import threading
b = tclnats_py.sync.connect(URL)
done = threading.Event()
got = [0]
def on_msg(msg):
    got[0] += 1
    if got[0] == N:
        done.set()
b.subscribe("is.deliver", cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
b.flush()
publish = a.publish
for _ in range(N):
    publish("is.deliver", PAYLOAD)
a.flush(30)
if not done.wait(600):
    raise SystemExit(f"sync_deliver: {got[0]} of {N} messages came")
b.close()
""",
    "sync_request": """\
request = a.request
for _ in range(N):
    request(ECHO, PAYLOAD, timeout=5)
""",
    "sync_js_publish": """\
js = a.jetstream()
stream = "IS_" + str(N)
try:
    js.delete_stream(stream)
except Exception:
    pass
js.create_stream(stream, subjects=["isp." + str(N)], storage="memory")
publish = js.publish
for _ in range(N):
    publish("isp." + str(N), PAYLOAD)
js.delete_stream(stream)
""",
    "sync_kv_put": _SYNC_BUCKET.format(prefix="iq_") + """\
put = kv.put
for i in range(N):
    put("k" + str(i % 100), PAYLOAD)
js.delete_key_value(bucket)
""",
    "sync_kv_get": _SYNC_BUCKET.format(prefix="ik_") + """\
for k in range(100):
    kv.put("k" + str(k), PAYLOAD)
get = kv.get
for i in range(N):
    get("k" + str(i % 100))
js.delete_key_value(bucket)
""",
}

_RAW_HEAD = """\
import sys
from tclnats_py.compat.bench_raw import PAYLOAD, RawConn, _api, _stream, inbox, js_publish, request
N, URL, ECHO = int(sys.argv[1]), sys.argv[2], sys.argv[3]
"""

# the floor of the sync rows, in the same units: compat/bench_raw.py's
# blocking socket client (no library), a program after _RAW_HEAD
_RAW_KV = """\
a = RawConn(URL)
prefix = b"_RAWV.i%d" % N
inbox(a, prefix)
bucket = "RAWV_" + str(N)
_stream(a, prefix, "KV_" + bucket, ["$KV." + bucket + ".>"], max_msgs_per_subject=1, allow_direct=True,
        allow_rollup_hdrs=True, deny_delete=True, discard="new")
keys = [("$KV.%s.k%d" % (bucket, k)).encode() for k in range(100)]
def put(i):
    if b'"seq"' not in a.request(keys[i % 100], b"%s.p%d" % (prefix, i), PAYLOAD)[2]:
        raise RuntimeError("no ack")
for k in range(100):
    put(k)
"""
_RAW = {
    "raw_request": "request(URL, N, \"i\", echo=ECHO)\n",
    "raw_js_publish": "js_publish(URL, N, \"i\" + str(N))\n",
    "raw_kv_put": _RAW_KV + """\
for i in range(N):
    put(i)
_api(a, "$JS.API.STREAM.DELETE.KV_" + bucket, b"", prefix)
""",
    "raw_kv_get": _RAW_KV + """\
gets = [("$JS.API.DIRECT.GET.KV_%s.$KV.%s.k%d" % (bucket, bucket, k)).encode() for k in range(100)]
for i in range(N):
    if not a.request(gets[i % 100], b"%s.g%d" % (prefix, i))[2].endswith(PAYLOAD):
        raise RuntimeError("wrong value")
_api(a, "$JS.API.STREAM.DELETE.KV_" + bucket, b"", prefix)
""",
}

# whole programs (argv: N URL ECHO): the parser fed in memory (no server);
# the raw-socket publisher of bench_py's ceiling (frames made in advance,
# sent 512 at a time), the floor the faces' publish is measured against
_PY_OFFLINE = {
    "raw_publish": """\
import sys
from tclnats_py.compat import bench_raw
bench_raw.publish(sys.argv[2], int(sys.argv[1]), "ia")
""",
    "parser_feed": """\
import sys
from tclnats_py.engine.protocol import Parser
N = int(sys.argv[1])
frame = b"MSG ia.deliver 1 128\\r\\n" + b"x" * 128 + b"\\r\\n"
data = frame * N
p = Parser()
for i in range(0, len(data), 65536):
    p.feed(data[i:i + 65536])
""",
}

_TCL_HEAD = """\
package require nats
lassign $argv N url echo
set payload [string repeat x 128]
set c [nats::connection new ia]
$c configure -servers $url
$c connect
"""

_TCL = {
    "tcl_publish": """\
for {set i 0} {$i < $N} {incr i} {
    $c publish ia.pub $payload
}
$c ping -timeout 600000
""",
    "tcl_deliver": """\
set s [nats::connection new ias]
$s configure -servers $url
$s connect
set ::received 0
proc on_msg {subject msg reply} {
    if {[incr ::received] == $::N} {
        set ::all_received 1
    }
}
$s subscribe ia.deliver -callback on_msg
$s ping
for {set i 0} {$i < $N} {incr i} {
    $c publish ia.deliver $payload
}
vwait ::all_received
$s destroy
""",
    "tcl_request": """\
for {set i 0} {$i < $N} {incr i} {
    $c request $echo $payload -timeout 5000
}
""",
    "tcl_fetch": """\
set js [$c jet_stream -timeout 5000]
set stream IT_$N
catch {$js delete_stream $stream}
$js add_stream $stream -subjects [list itf.$N] -storage memory
for {set i 0} {$i < $N} {incr i} {
    $c publish itf.$N $payload
}
$c ping
$js add_pull_consumer $stream PULL -ack_policy none
set got 0
while {$got < $N} {
    incr got [llength [$js fetch $stream PULL -batch_size 500 -timeout 60000]]
}
$js delete_stream $stream
""",
}

SCENARIOS = [*_PY, *_SYNC, *_RAW, *_PY_OFFLINE, *_TCL]


def _program(name: str) -> tuple[str, str]:
    """(language, source) of a scenario."""
    if name in _PY:
        body = "".join("    " + line + "\n" for line in _PY[name].splitlines())
        return "py", f"{_PY_HEAD}async def main():\n{body}asyncio.run(main())\n"
    if name in _SYNC:
        return "py", f"{_SYNC_HEAD}{_SYNC[name]}a.close()\n"
    if name in _RAW:
        return "py", _RAW_HEAD + _RAW[name]
    if name in _PY_OFFLINE:
        return "py", _PY_OFFLINE[name]
    return "tcl", _TCL_HEAD + _TCL[name] + "$c destroy\nexit 0\n"


def _side_env(python: str, path: str | None, spin: bool) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = path
    if not spin:
        env["TCLNATS_SPIN_US"] = "0"
    env["PYTHONHASHSEED"] = "0"  # the same dict and set layouts in every run
    return env


def _tcl_command(python: str, env: dict, cwd: str) -> tuple[list[str], dict]:
    """stock tclsh with this install's Tcl folder on TCLLIBPATH (tcl_env)."""
    probe = ("import json; from tclnats_py.tclface.tclsh import tcl_env, find_tclsh; "
             "print(json.dumps([find_tclsh(), tcl_env()]))")
    out = subprocess.run([python, "-c", probe], env=env, cwd=cwd, capture_output=True, text=True, check=True)
    tclsh, tenv = json.loads(out.stdout)
    return [tclsh], tenv


def _instructions(cmd: list[str], env: dict, cwd: str) -> int:
    """The client's total instruction count under callgrind."""
    out = os.path.join(cwd, "callgrind.out")
    run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
                         env=env, cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {run.returncode}\n{run.stderr[-2000:]}")
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                total = int(m.group(1))
    os.unlink(out)
    return total


def _interpreter(python: str, env: dict, cwd: str) -> str:
    """The interpreter's own executable: valgrind follows no launcher script
    (a pyenv shim) into the program it starts."""
    out = subprocess.run([python, "-c", "import sys; print(sys.executable)"], env=env, cwd=cwd,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def per_message(name: str, python: str, path: str | None, counts: tuple[int, int], url: str,
                spin: bool = False, echo: str = "ia.echo") -> float:
    """Instructions per message of scenario ``name`` for one install
    (``echo``: the subject of the request scenarios' echo responder)."""
    lang, source = _program(name)
    with tempfile.TemporaryDirectory(prefix="instr_ab.") as cwd:
        env = _side_env(python, path, spin)
        python = _interpreter(python, env, cwd)
        script = os.path.join(cwd, "scenario." + lang)
        with open(script, "w") as f:
            f.write(source)
        head, env = _tcl_command(python, env, cwd) if lang == "tcl" else ([python], env)
        # once outside valgrind first: byte code compiled and cached before counting
        subprocess.run([*head, script, str(counts[0]), url, echo], env=env, cwd=cwd, check=True,
                       capture_output=True)
        low, high = (_instructions([*head, script, str(n), url, echo], env, cwd) for n in counts)
    return (high - low) / (counts[1] - counts[0])


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="instr_ab", description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the old install's python")
    ap.add_argument("--old-path", help="PYTHONPATH for the old side")
    ap.add_argument("--new", default=sys.executable, help="the new install's python (default: this one)")
    ap.add_argument("--new-path", help="PYTHONPATH for the new side")
    ap.add_argument("--counts", type=int, nargs=2, default=(2000, 10000), metavar=("LOW", "HIGH"))
    ap.add_argument("--spin", action="store_true", help="keep the spin before a wait (TCLNATS_SPIN_US)")
    ap.add_argument("--ws", action="store_true", help="through the server's websocket listener (ws://)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("scenario", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    args = ap.parse_args(argv)
    unknown = set(args.scenario) - set(SCENARIOS)
    if unknown:
        ap.error(f"unknown scenario {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if not shutil.which("valgrind"):
        print("instr_ab: valgrind not found", file=sys.stderr)
        return 2
    from tclnats_py.compat.bench_raw import EchoResponder
    from tclnats_py.testing.server import NatsServer
    rows = []
    with NatsServer(jetstream=True, websocket=args.ws) as server, EchoResponder(server.url) as echo:
        url = server.ws_url if args.ws else server.url
        print(f"{'scenario':<16} {'old instr/msg':>14} {'new instr/msg':>14} {'new/old':>8}", flush=True)
        for name in args.scenario or SCENARIOS:
            old = per_message(name, args.old, args.old_path, args.counts, url, args.spin, echo)
            new = per_message(name, args.new, args.new_path, args.counts, url, args.spin, echo)
            rows.append({"scenario": name, "old": old, "new": new, "new_over_old": new / old})
            print(f"{name:<16} {old:>14.0f} {new:>14.0f} {new / old:>8.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"counts": list(args.counts), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
