"""Python side of the benchmark: tclnats_py's asyncio API against nats-py, same
server, same run, 128-byte messages.

    python -m tclnats_py.compat.bench_py [--count N] [--rounds R] [--short] [--json out.json] [--uvloop]

Figures: publish (hand COUNT messages to the client, then flush), delivery to a
callback on a second connection, request round trips to an echo responder,
the same with up to 256 requests in flight (request_async),
and JetStream publishes through each library's JetStream API: ``js.publish``
awaited one at a time (js_publish), and ``js.publish_async`` for COUNT
messages followed by waiting for every ack (js_publish_async; each library
with its default limit of acks in flight, 4000 for both).  Then the rows of
compat/bench.py's Tcl workload: fetch (a pull consumer without acks reads
max(2000, COUNT/5) stored messages in pull requests of 500: nats-py's
``pull_subscribe`` + ``fetch``, tclnats_py's ``create_consumer`` +
``fetch``, nats-jetstream's ``create_consumer`` + ``fetch``), kv_put and
kv_get (sequential ``kv.put`` / ``kv.get`` over 100 keys of a memory
bucket; nats-core's column through the nats-key-value package when it is
installed, else the cell says so).

Every requester of a round (nats-py, tclnats_py, natspy, the blocking face,
the raw-socket ceiling; over WebSocket too) talks to one echo responder that
runs in a process of its own, started once per round
(compat/bench_raw.py ``EchoResponder``: a raw blocking socket answering each
MSG with a PUB to its reply subject): the request rows measure the
requester alone, against a responder that costs every side the same, and
every reply must equal its request; no side's figure includes a responder
of its own.  The subprocess sides (nats-core, no accel) talk to one
responder of the same kind, started once for them.

The two libraries take turns, R rounds (default 3), the order swapped every
round, and each figure is the median of its rounds: on a small shared machine
single runs of the latency-bound figures (request, js_publish) vary by 2x
from run to run, and whoever runs second in a fixed order is favoured.  The
last two columns are the CPU time of this process (both connections) per
message: where the rates are close and the CPU is not, the figure is bound by
waiting for the server, not by the client.

The column "sync" is the blocking face (``tclnats_py.sync``,
compat/bench_sync.py) in the same rounds, for the rows it can run: publish,
deliver, request, and js_publish, kv_put, kv_get once the blocking face has
JetStream; "-" elsewhere.  Its ratio is against nats-py, and its percentage
against the raw socket.  ``--rows publish,request`` measures those rows only
(a quick check of the harness; the published figures are the full run's).

The column "nats-py API on tclnats_py" runs the nats-py calls of the nats-py
side through ``tclnats_py.natspy`` (nats-py's API over this engine), in the
same rounds; its ratio is against nats-py.

Two more columns come from the same run: "raw socket" (compat/bench_raw.py:
protocol bytes framed in advance through plain sockets, the ceiling; each
figure of ours is also printed as a percentage of it), "no accel" (tclnats_py
in a subprocess with the parser's compiled accelerator off,
TCLNATS_PY_ACCEL=0, when it is built), and the new official
client nats-core / nats-jetstream, which needs Python >= 3.13: it runs in a
subprocess of that Python (``--py313 PATH``, default: $TCLNATS_BENCH_PY313,
then ``python3.13`` on PATH) together with tclnats_py on that same Python, so
that the two are compared on one interpreter; when it cannot run, the column
says why.  In the short form (CI) these subprocess columns take one round.
``--uvloop`` runs every client (nats-py, nats-core and the subprocesses
too) on uvloop's event loop instead of asyncio's (``pip install
tclnats_py[uvloop]``); the first line of the table says which loop ran.
Last, the peak RSS of a process that connects and awaits 200,000
publishes, for each client (``--no-rss`` skips it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from tclnats_py.compat import bench_raw

try:
    from tclnats_py.compat.bench_raw import EchoResponder
except ImportError:  # bench_ab's child on an older install runs this file: its bench_raw is beside it
    from bench_raw import EchoResponder

PAYLOAD = b"x" * 128
# how a workload is run: asyncio.run, or uvloop.run with --uvloop (every side, the children too)
_RUN = asyncio.run
# the rows measured (--rows; every figure by default)
_ROWS: list = []


class Side:
    """The few calls the workload needs, for either client library."""

    def __init__(self, name):
        self.name = name

    async def connect(self, url, name=None):
        """A connection; ``name`` is the one the server lists it under."""
        named = {"name": name} if name else {}
        if self.name == "tclnats_py":
            import tclnats_py
            return await tclnats_py.connect(url, **named)
        if self.name == "nats-core":
            import nats.client
            try:
                return await nats.client.connect(url, **named)
            except TypeError:  # no connection name there: the harness cannot count its publishes
                self.unnamed = True
                return await nats.client.connect(url)
        if self.name == "natspy":  # nats-py's API on tclnats_py's engine: nats-py's calls below
            from tclnats_py import natspy
            return await natspy.connect(url, **named)
        import nats
        return await nats.connect(url, **named)

    async def publish(self, c, subject, data, reply=None):
        if self.name == "tclnats_py":
            await c.publish(subject, data, reply)  # waits only when the socket is behind
        elif self.name == "nats-core":
            await c.publish(subject, data, reply=reply)
        else:
            await c.publish(subject, data, reply=reply or "")

    async def subscribe(self, c, subject, cb):
        """Messages to the coroutine function ``cb``, one after the other."""
        if self.name != "nats-core":
            return await c.subscribe(subject, cb=cb)
        sub = await c.subscribe(subject)  # nats-core: no coroutine callbacks; a task reads the messages

        async def pump():
            async for msg in sub:
                await cb(msg)
        self.tasks = getattr(self, "tasks", [])
        self.tasks.append(asyncio.get_running_loop().create_task(pump()))
        return sub

    def jetstream(self, c):
        if self.name == "nats-core":
            from nats import jetstream
            return jetstream.new(c)
        return c.jetstream()

    async def flush(self, c):
        await c.flush()
        if self.name != "tclnats_py":
            # nats-py's PING can overtake a SUB still in its pending buffer: a second
            # round trip makes sure the server has the subscription
            await c.flush()

    async def request(self, c, subject, data, timeout=5):
        return await c.request(subject, data, timeout=timeout)

    async def js_publish(self, js, subject, data):
        ack = await js.publish(subject, data)
        return ack.sequence if self.name == "nats-core" else ack.seq

    def _api(self):
        """nats-py's configuration classes, of nats-py or of tclnats_py.natspy."""
        if self.name == "natspy":
            from tclnats_py.natspy.js import api
        else:
            from nats.js import api
        return api

    async def pull_consumer(self, js, stream, subject):
        """The fetch figure's pull consumer (durable PULL, no acks, filtered
        on ``subject``), made the way each library makes one."""
        if self.name == "tclnats_py":
            return await js.create_consumer(stream, durable_name="PULL", ack_policy="none", filter_subject=subject)
        if self.name == "nats-core":
            s = await js.get_stream(stream)
            return await s.create_consumer(name="PULL", durable_name="PULL", ack_policy="none",
                                           filter_subject=subject)
        api = self._api()
        return await js.pull_subscribe(subject, durable="PULL", stream=stream,
                                       config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE))

    async def fetch(self, cons, batch):
        """One pull request for up to ``batch`` messages (waiting at most 2 s); how many came."""
        if self.name == "tclnats_py":
            return len(await cons.fetch(batch, max_wait=2))
        if self.name == "nats-core":
            n = 0
            async for _ in await cons.fetch(max_messages=batch, max_wait=2):
                n += 1
            return n
        return len(await cons.fetch(batch, timeout=2))

    async def key_value(self, js, bucket):
        """A new bucket in memory, through the library's KV API (nats-core:
        the nats-key-value package, when installed)."""
        if self.name == "tclnats_py":
            return await js.create_key_value(bucket, storage="memory")
        if self.name == "nats-core":
            try:
                from nats import key_value
            except ImportError as e:
                raise NotImplementedError("nats-key-value not installed") from e
            return await key_value.create_key_value(js, key_value.KeyValueConfig(bucket=bucket, storage="memory"))
        return await js.create_key_value(bucket=bucket, storage=self._api().StorageType.MEMORY)

    async def js_publish_async_all(self, js, subject, data, n):
        """n asynchronous JetStream publishes, then every ack."""
        if self.name == "nats-core":
            raise NotImplementedError("nats-jetstream has no asynchronous publish")
        if self.name == "tclnats_py":
            for _ in range(n):
                await js.publish_async(subject, data)
            await js.publish_async_complete()
        else:
            for _ in range(n):
                await js.publish_async(subject, data)
            await js.publish_async_completed()


def _figure(n: int, t: float, c: float) -> tuple:
    """(messages per second, CPU microseconds of this process per message)."""
    return n / (time.perf_counter() - t), (time.process_time() - c) / n * 1e6


def _received_from(monitor: str, name: str) -> int | None:
    """How many messages the server has received from the open connection named ``name``."""
    import urllib.request
    with urllib.request.urlopen(f"{monitor}/connz?limit=100000", timeout=10) as r:
        conns = [c for c in json.load(r).get("connections") or [] if c.get("name") == name]
    return sum(c.get("in_msgs", 0) for c in conns) if conns else None


def _check(ok: bool, side: Side, what: str) -> None:
    if not ok:
        raise RuntimeError(f"{side.name}: {what}")


async def _publish_figures(side: Side, a, b, tag: str, pubname: str, count: int, monitor: str | None,
                           out: dict) -> None:
    """publish (checked against the server's count when ``monitor`` is its
    monitoring URL) and deliver."""
    # the three libraries take publish(subject, payload) alike: the loop calls
    # the client's own method, so that no wrapper's cost is measured with it
    publish = a.publish
    subject = f"bp.{tag}.pub"
    t, c = time.perf_counter(), time.process_time()
    for _ in range(count):
        await publish(subject, PAYLOAD)
    await side.flush(a)
    out["publish"] = _figure(count, t, c)
    if monitor and not getattr(side, "unnamed", False):
        sent = _received_from(monitor, pubname)
        _check(sent == count, side, f"publish: the server received {sent} of {count} messages")

    done = asyncio.get_running_loop().create_future()
    got = 0

    async def on_msg(msg):
        nonlocal got
        got += 1
        if got == count and not done.done():
            done.set_result(None)
    await side.subscribe(b, f"bp.{tag}.deliver", on_msg)
    await side.flush(b)
    subject = f"bp.{tag}.deliver"
    t, c = time.perf_counter(), time.process_time()
    for _ in range(count):
        await publish(subject, PAYLOAD)
    await side.flush(a)
    await asyncio.wait_for(done, 120)
    out["deliver"] = _figure(count, t, c)


async def _request_figures(side: Side, a, echo: str, rounds: int, count: int, out: dict) -> None:
    """request (``rounds`` one at a time) and request_async (256 in flight),
    to the round's echo responder on ``echo`` (bench_raw.EchoResponder)."""
    wrong = 0
    t, c = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        if (await side.request(a, echo, PAYLOAD)).data != PAYLOAD:
            wrong += 1
    out["request"] = _figure(rounds, t, c)
    _check(not wrong, side, f"request: {wrong} of {rounds} replies differ from the request")
    n_conc = max(2000, count // 10)
    # 256 workers, each making its share of the requests one after the
    # other: 256 in flight, without the harness's own cost of a task per
    # request and an asyncio.Semaphore (whose release scans its waiters:
    # ~15% of this figure's CPU in a profile, on every side alike)
    left = [n_conc]

    answered = [0]

    async def worker():
        while left[0] > 0:
            left[0] -= 1
            if (await side.request(a, echo, PAYLOAD)).data == PAYLOAD:
                answered[0] += 1
    t, c = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(256)))
    out["request_async"] = _figure(n_conc, t, c)
    _check(answered[0] == n_conc, side, f"request_async: {answered[0]} of {n_conc} requests answered alike")


async def _js_publish_figures(side: Side, a, js, stream: str, tag: str, rounds: int, count: int,
                              out: dict) -> None:
    """js_publish and js_publish_async into ``stream`` (made before), then
    the count of what it stored."""
    t, c = time.perf_counter(), time.process_time()
    acked = 0
    for _ in range(rounds):
        if await side.js_publish(js, f"bpjs.{tag}.x", PAYLOAD) > 0:
            acked += 1
    out["js_publish"] = _figure(rounds, t, c)
    _check(acked == rounds, side, f"js_publish: {acked} of {rounds} publishes acked")
    n_async = max(5000, count // 2)
    if side.name != "nats-core":
        t, c = time.perf_counter(), time.process_time()
        await side.js_publish_async_all(js, f"bpjs.{tag}.y", PAYLOAD, n_async)
        out["js_publish_async"] = _figure(n_async, t, c)
    else:
        n_async = 0
    info = json.loads((await side.request(a, f"$JS.API.STREAM.INFO.{stream}", b"")).data)
    _check(info["state"]["messages"] == rounds + n_async, side,
           f"JetStream: {info['state']['messages']} of {rounds + n_async} messages stored")


async def _fetch_figure(side: Side, a, js, stream: str, tag: str, count: int, out: dict) -> None:
    """fetch: a pull consumer (no acks) reads ``total`` stored messages in pull
    requests of 500, as compat/bench_workload.tcl and bench_raw.fetch do."""
    publish = a.publish
    total = max(2000, count // 5)
    subject = f"bpjs.{tag}.f"
    for _ in range(total):
        await publish(subject, PAYLOAD)
    await side.flush(a)
    cons = await side.pull_consumer(js, stream, subject)
    got = 0
    t, c = time.perf_counter(), time.process_time()
    while got < total:
        n = await side.fetch(cons, 500)
        _check(n > 0, side, f"fetch: a pull brought nothing after {got} of {total} messages")
        got += n
    out["fetch"] = _figure(got, t, c)


async def _kv_figures(side: Side, a, js, tag: str, rounds: int, out: dict) -> None:
    """KV: sequential puts over 100 keys, then gets of them, each library's KV
    calls (``out["kv_none"]`` says why when the library has none)."""
    bucket = f"BP_{tag.upper()}"
    await side.request(a, f"$JS.API.STREAM.DELETE.KV_{bucket}", b"")
    try:
        kv = await side.key_value(js, bucket)
    except NotImplementedError as e:
        out["kv_none"] = str(e)
        return
    keys = [f"key.{i}" for i in range(100)]
    put, get = kv.put, kv.get
    t, c = time.perf_counter(), time.process_time()
    for i in range(rounds):
        revision = await put(keys[i % 100], PAYLOAD)
    out["kv_put"] = _figure(rounds, t, c)
    # a fresh bucket: the last put's revision is the number of puts stored
    _check(revision == rounds, side, f"kv_put: the last of {rounds} puts has revision {revision}")
    wrong = 0
    t, c = time.perf_counter(), time.process_time()
    for i in range(rounds):
        if (await get(keys[i % 100])).value != PAYLOAD:
            wrong += 1
    out["kv_get"] = _figure(rounds, t, c)
    _check(not wrong, side, f"kv_get: {wrong} of {rounds} gets read another value")
    await side.request(a, f"$JS.API.STREAM.DELETE.KV_{bucket}", b"")


async def workload(side: Side, url: str, count: int, monitor: str | None = None, echo: str | None = None) -> dict:
    """Each figure of one side; every figure checks its count (the server's
    count of the published messages when ``monitor`` is its monitoring URL);
    the request rows talk to the echo responder on ``echo`` (None: one of
    this call's own)."""
    out: dict = {}
    tag = side.name.replace("-", "_")
    pubname = f"bp-pub-{tag}-{os.getpid()}-{time.monotonic_ns()}"
    a = await side.connect(url, pubname)
    b = await side.connect(url)
    rows = _ROWS or FIGURES
    if "publish" in rows or "deliver" in rows:
        await _publish_figures(side, a, b, tag, pubname, count, monitor, out)
    rounds = max(500, count // 50)
    if "request" in rows or "request_async" in rows:
        if echo:
            await _request_figures(side, a, echo, rounds, count, out)
        else:
            with EchoResponder(url) as subject:
                await _request_figures(side, a, subject, rounds, count, out)
    if any(r in rows for r in FIGURES[4:]):
        await _js_workload(side, a, tag, rounds, count, out)
    for task in getattr(side, "tasks", ()):
        task.cancel()
    await a.close()
    await b.close()
    return out


async def _js_workload(side: Side, a, tag: str, rounds: int, count: int, out: dict) -> None:
    """The JetStream rows: js_publish with js_publish_async, fetch, and
    kv_put with kv_get (each pair measured when either of it is wanted)."""
    # JetStream through the API subjects (the same requests for both clients)
    stream = f"BP_{tag.upper()}"
    await side.request(a, f"$JS.API.STREAM.DELETE.{stream}", b"")
    cfg = json.dumps({"name": stream, "subjects": [f"bpjs.{tag}.>"], "storage": "memory"}).encode()
    await side.request(a, f"$JS.API.STREAM.CREATE.{stream}", cfg)
    js = side.jetstream(a)
    rows = _ROWS or FIGURES
    if "js_publish" in rows or "js_publish_async" in rows:
        await _js_publish_figures(side, a, js, stream, tag, rounds, count, out)
    if "fetch" in rows:
        await _fetch_figure(side, a, js, stream, tag, count, out)
    await side.request(a, f"$JS.API.STREAM.DELETE.{stream}", b"")
    if "kv_put" in rows or "kv_get" in rows:
        await _kv_figures(side, a, js, tag, rounds, out)


FIGURES = ["publish", "deliver", "request", "request_async", "js_publish", "js_publish_async", "fetch",
           "kv_put", "kv_get"]
#: the figures measured over WebSocket too (issue 37: >= 60% of TCP, >= 2x nats-py over WebSocket; request
#: within 1.3x of TCP's round trip)
WS_FIGURES = ["publish", "deliver", "request"]


async def core_workload(side: Side, url: str, count: int, monitor: str | None, echo: str) -> dict:
    """publish, deliver and request of one side (the WebSocket rows; the
    echo responder on ``echo`` connected over TCP)."""
    out: dict = {}
    tag = side.name.replace("-", "_") + "_ws"
    pubname = f"bp-pub-{tag}-{os.getpid()}-{time.monotonic_ns()}"
    a = await side.connect(url, pubname)
    b = await side.connect(url)
    await _publish_figures(side, a, b, tag, pubname, count, monitor, out)
    await _request_figures(side, a, echo, max(500, count // 50), count, out)
    for task in getattr(side, "tasks", ()):
        task.cancel()
    await a.close()
    await b.close()
    return {f: out[f] for f in WS_FIGURES}


def ws_sides() -> tuple[list, str]:
    """The sides measured over WebSocket, and why nats-py is not among them
    ("" when it is): nats-py's WebSocket transport needs aiohttp."""
    import importlib.util
    if importlib.util.find_spec("aiohttp") is None:
        return ["tclnats_py"], "nats-py over WebSocket needs aiohttp (pip install aiohttp): not measured"
    return ["nats-py", "tclnats_py"], ""


def _ws_rounds(ws_url: str, url: str, count: int, rounds: int, monitor: str | None) -> tuple[dict, str]:
    """Each WebSocket side's figures per round, the sides taking turns (the
    round's echo responder on ``url``, the server's TCP port)."""
    names, why = ws_sides()
    runs: dict = {name: [] for name in names}
    for r in range(max(1, rounds)):
        k = r % len(names)
        with EchoResponder(url) as echo:
            for name in names[k:] + names[:k]:
                runs[name].append(_RUN(core_workload(Side(name), ws_url, count, monitor, echo)))
    return runs, why


def _ws_table(ws: dict, why: str, med: dict) -> tuple[list, list]:
    """(JSON rows, printed lines) of the WebSocket figures beside our TCP ones."""
    wmed = {name: _median(rs) for name, rs in ws.items()}
    rows, lines = [], [f"over WebSocket (ws://, the same server){'' if not why else ': ' + why}",
                       f"{'figure':<18}{'nats-py ws':>11}{'tclnats_py ws':>14}{'ratio':>7}{'tclnats_py TCP':>15}"
                       f"{'ws/TCP':>8}"]
    for fig in WS_FIGURES:
        o = wmed.get("nats-py", {}).get(fig, (None, 0))[0]
        t = wmed["tclnats_py"][fig][0]
        tcp = med["tclnats_py"][fig][0]
        rows.append({"figure": fig, "nats-py_ws": o, "tclnats_py_ws": t, "ratio": t / o if o else None,
                     "tclnats_py_tcp": tcp, "ws_of_tcp": t / tcp})
        lines.append(f"{fig:<18}{(f'{o:,.0f}' if o else '-'):>11}{t:>14,.0f}{(f'{t / o:.2f}x' if o else '-'):>7}"
                     f"{tcp:>15,.0f}{100 * t / tcp:>7.0f}%")
    return rows, lines


def which_package() -> str:
    """Where tclnats_py comes from, and whether it is this checkout's."""
    import tclnats_py
    return os.path.dirname(os.path.abspath(tclnats_py.__file__))


def _peak_rss(name: str, url: str, n: int) -> dict:
    """Run in a subprocess: connect, await ``n`` publishes, flush; the peak RSS (VmHWM)."""
    async def go():
        side = Side(name)
        c = await side.connect(url)
        subject = "bp.rss." + name.replace("-", "_")
        for _ in range(n):
            await side.publish(c, subject, PAYLOAD)
        await side.flush(c)
        await c.close()
    _RUN(go())
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    return {"name": name, "peak_rss_mb": hwm / 1024, "python": sys.version.split()[0]}


def _py313(arg: str | None) -> tuple[str | None, str]:
    """(path of a Python >= 3.13 with nats-core and nats-jetstream, or None; why not)."""
    cands = [arg] if arg else [os.environ.get("TCLNATS_BENCH_PY313"), shutil.which("python3.13"),
                               "/tmp/venv313/bin/python"]
    why = "no Python >= 3.13 found (--py313 PATH or $TCLNATS_BENCH_PY313)"
    for exe in cands:
        if not exe or not os.path.exists(exe):
            continue
        r = subprocess.run([exe, "-c", "import sys, nats.client, nats.jetstream; "
                            "assert sys.version_info >= (3, 13); print(sys.version.split()[0])"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return exe, r.stdout.strip()
        why = f"{exe}: nats-core/nats-jetstream not importable ({r.stderr.strip().splitlines()[-1:]})"
    return None, why


def _child(exe: str, args: list, env_extra: dict | None = None, timeout: float = 900) -> dict:
    """This file run by ``exe`` (tclnats_py importable from this checkout); its JSON answer."""
    import tclnats_py
    root = os.path.dirname(os.path.dirname(os.path.abspath(tclnats_py.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    env.update(env_extra or {})
    r = subprocess.run([exe, os.path.abspath(__file__)] + args, capture_output=True, text=True, env=env,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{exe} {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _rounds(names: list, url: str, count: int, rounds: int, raw: bool, monitor: str | None = None,
            ceiling_each: list | None = None, echo: str | None = None) -> dict:
    """Each side's figures for each round, the sides taking turns (order
    rotated every round); ``raw`` adds the raw-socket ceiling (each figure
    the faster way of waiting; both ways appended to ``ceiling_each``).
    The request rows talk to the echo responder on ``echo`` (a subprocess
    side: its parent's), else to one started for each round."""
    runs: dict = {name: [] for name in names}
    if raw:
        runs["raw socket"] = []
    order = list(runs)
    for r in range(max(1, rounds)):
        if echo:
            _round(order, r, url, count, monitor, echo, runs, ceiling_each)
            continue
        with EchoResponder(url) as subject:  # every requester of the round talks to it
            _round(order, r, url, count, monitor, subject, runs, ceiling_each)
    return runs


def _round(order: list, r: int, url: str, count: int, monitor: str | None, echo: str, runs: dict,
           ceiling_each: list | None) -> None:
    """Round ``r`` of :func:`_rounds`: each side once, the order rotated by ``r``."""
    k = r % len(order)
    for name in order[k:] + order[:k]:
        if name == "raw socket":
            figs, each = bench_raw.ceiling(url, count, _ROWS or FIGURES, tag=f"r{r}", echo=echo)
            if ceiling_each is not None:
                ceiling_each.append(each)
            runs[name].append({f: (v, 0.0) for f, v in figs.items()})
        elif name == "sync":
            received = (lambda n: _received_from(monitor, n)) if monitor else None
            from tclnats_py.compat import bench_sync  # (a child of bench_ab may be an older install)
            runs[name].append(bench_sync.workload(url, count, _ROWS or FIGURES, received, echo))
        else:
            runs[name].append(_RUN(workload(Side(name), url, count, monitor, echo)))


def serve(name: str, url: str, monitor: str | None, echo: str) -> None:
    """bench_ab's side ``name`` kept running: each line read, ``{"rows":
    [...], "count": N}``, runs those rows once (connections of their own,
    requests to ``echo``) and answers one line, ``{"figures": {figure:
    [rate, cpu]}}`` or ``{"error": "..."}``, until standard input ends."""
    for line in sys.stdin:
        ask = json.loads(line)
        _ROWS[:] = [f for f in FIGURES if f in ask["rows"]]
        try:
            answer = {"figures": _RUN(workload(Side(name), url, int(ask["count"]), monitor, echo))}
        except Exception as e:  # the harness records it as the turn's failure and goes on
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


def _median(rs: list) -> dict:
    return {fig: (statistics.median(run[fig][0] for run in rs if fig in run),
                  statistics.median(run[fig][1] for run in rs if fig in run))
            for fig in FIGURES if any(fig in run for run in rs)}


def _parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100000)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--py313", help="a Python >= 3.13 with nats-core and nats-jetstream installed")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS figure")
    ap.add_argument("--no-websocket", action="store_true", help="skip the figures over WebSocket")
    ap.add_argument("--rows", help=f"measure these rows only, comma-separated (of {','.join(FIGURES)})")
    ap.add_argument("--uvloop", action="store_true",
                    help="run every client on uvloop's event loop instead of asyncio's (pip install tclnats_py[uvloop])")
    # internal: what a subprocess runs
    ap.add_argument("--child-sides", help=argparse.SUPPRESS)
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--child-rss", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--monitor", help=argparse.SUPPRESS)
    ap.add_argument("--echo", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def _use_uvloop() -> list:
    """Run every workload on uvloop; the arguments that tell a child so."""
    global _RUN
    try:
        import uvloop
    except ImportError:
        raise SystemExit("--uvloop: uvloop is not installed (pip install tclnats_py[uvloop])") from None
    _RUN = uvloop.run
    return ["--uvloop"]


def _check_package() -> None:
    """Stop unless tclnats_py is imported from the tree this file is in."""
    pkg = which_package()
    print(f"tclnats_py loaded from {pkg}", flush=True)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not pkg.startswith(here):
        raise SystemExit(f"tclnats_py.compat.bench_py: tclnats_py comes from {pkg}, not from this tree ({here})")


def _peak_rss_all(py313: str | None, url: str, n_rss: int, loop_args: list, failures: list) -> list:
    """The peak RSS of each client awaiting ``n_rss`` publishes, each in a subprocess."""
    rss: list = []
    jobs = [("tclnats_py", sys.executable), ("nats-py", sys.executable)]
    if py313:
        jobs += [("nats-core", py313), ("tclnats_py", py313)]
    for name, exe in jobs:
        try:
            rss.append(_child(exe, ["--child-rss", name, "--url", url, "--count", str(n_rss)] + loop_args))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            failures.append(f"peak RSS of {name} on {exe}: failed: {e}")
    return rss


def _measure(args, count: int, py313: str | None, py313_why: str, child_rounds: str, loop_args: list,
             failures: list, ceiling_each: list) -> tuple:
    """(rounds of this process's sides, of nats-core's subprocess, of the
    subprocess without the accelerator, peak RSS list, why nats-core is
    missing), all on one server."""
    from tclnats_py.testing.server import NatsServer
    core: dict | None = None
    pure: dict | None = None
    rss: list = []
    with NatsServer(jetstream=True, monitor=True, websocket=True) as srv, EchoResponder(srv.url) as echo:
        # (the subprocess sides' request rows talk to this responder, the rounds here to one each)
        mon = ["--monitor", srv.monitor_url, "--echo", echo]
        runs = _rounds(["nats-py", "tclnats_py", "natspy", "sync"], srv.url, count, args.rounds, True, srv.monitor_url,
                       ceiling_each)
        if not args.no_websocket:
            args.ws_runs, args.ws_why = _ws_rounds(srv.ws_url, srv.url, count, args.rounds, srv.monitor_url)
        if py313:
            try:
                core = _child(py313, ["--child-sides", "nats-core,tclnats_py", "--url", srv.url,
                                      "--count", str(count), "--rounds", child_rounds] + mon + loop_args)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                py313_why = f"nats-core run failed: {str(e).strip().splitlines()[-1][:200]}"
                failures.append(py313_why)
        from tclnats_py.engine import protocol as _proto
        if _proto.ACCELERATED:
            # the same figures with the parser's accelerator off (TCLNATS_PY_ACCEL=0)
            try:
                pure = _child(sys.executable, ["--child-sides", "tclnats_py", "--url", srv.url, "--count", str(count),
                                               "--rounds", child_rounds] + mon + loop_args, {"TCLNATS_PY_ACCEL": "0"})
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                failures.append(f"tclnats_py without the accelerator: failed: {e}")
        if not args.no_rss:
            rss = _peak_rss_all(py313, srv.url, 20000 if args.short else 200000, loop_args, failures)
    return runs, core, pure, rss, py313_why


def _table_row(fig: str, med: dict, pmed: dict, cmed: dict, core: dict | None) -> tuple[dict, str]:
    """(JSON row, printed line) of one figure."""
    (o, oc), (t, tc) = med["nats-py"][fig], med["tclnats_py"][fig]
    raw = med["raw socket"].get(fig, (None, 0))[0]
    row = {"figure": fig, "nats-py": o, "tclnats_py": t, "ratio": t / o, "raw_socket": raw,
           "pct_of_raw": (100 * t / raw) if raw else None, "cpu_us_nats_py": oc, "cpu_us_tclnats_py": tc}
    line = (f"{fig:<18}{o:>11,.0f}{t:>12,.0f}{t / o:>6.2f}x{(f'{raw:,.0f}' if raw else '-'):>12}"
            f"{(f'{100 * t / raw:.1f}%' if raw else '-'):>9}"
            f"{(f'{pmed[fig][0]:,.0f}' if fig in pmed else '-'):>10}   {oc:>11.1f}{tc:>11.1f}")
    if fig in pmed:
        row["tclnats_py_no_accel"] = pmed[fig][0]
    napi = med.get("natspy", {}).get(fig)
    if napi:
        row.update(natspy_api=napi[0], ratio_natspy_api=napi[0] / o)
    line += f"   {(f'{napi[0]:,.0f}' if napi else '-'):>26}{(f'{napi[0] / o:.2f}x' if napi else '-'):>7}"
    sy = med.get("sync", {}).get(fig)
    if sy:
        row.update(sync=sy[0], ratio_sync=sy[0] / o, pct_of_raw_sync=(100 * sy[0] / raw) if raw else None,
                   cpu_us_sync=sy[1])
    line += (f"   {(f'{sy[0]:,.0f}' if sy else '-'):>10}{(f'{sy[0] / o:.2f}x' if sy else '-'):>7}"
             f"{(f'{100 * sy[0] / raw:.1f}%' if sy and raw else '-'):>9}")
    if cmed:
        nc = cmed["nats-core"].get(fig)
        t13 = cmed["tclnats_py"].get(fig)
        if nc and t13:
            row.update(nats_core=nc[0], tclnats_py_313=t13[0], ratio_nats_core=t13[0] / nc[0])
            line += f"   | {nc[0]:>10,.0f}{t13[0]:>11,.0f}{t13[0] / nc[0]:>6.2f}x"
        else:
            why = "nats-jetstream has none" if fig == "js_publish_async" else next(
                (r["kv_none"] for r in (core or {}).get("nats-core", []) if "kv_none" in r), "not measured")
            row["nats_core_missing"] = why
            line += f"   | {'-':>10}{(f'{t13[0]:,.0f}' if t13 else '-'):>11}{'-':>7}  ({why})"
    return row, line


def main(argv=None) -> int:
    args = _parse_args(argv)
    count = 5000 if args.short else args.count
    if args.rows:
        unknown = [r for r in args.rows.split(",") if r not in FIGURES]
        if unknown:
            raise SystemExit(f"--rows: no such row {', '.join(unknown)} (rows: {', '.join(FIGURES)})")
        _ROWS[:] = [f for f in FIGURES if f in args.rows.split(",")]
        loop_rows = ["--rows", args.rows]
    else:
        loop_rows = []
    loop_args: list = (_use_uvloop() if args.uvloop else []) + loop_rows
    if args.serve:
        serve(args.serve, args.url, args.monitor, args.echo)
        return 0
    if args.child_sides:
        print(json.dumps(_rounds(args.child_sides.split(","), args.url, count, args.rounds, False, args.monitor,
                                 echo=args.echo)))
        return 0
    if args.child_rss:
        print(json.dumps(_peak_rss(args.child_rss, args.url, count)))
        return 0
    _check_package()
    py313, py313_why = _py313(args.py313)
    failures: list = []
    ceiling_each: list = []
    # the subprocess columns take one round in the short form (CI): nats-core's
    # round trips are slow (a few hundred a second), and they are not paired anyway
    child_rounds = str(1 if args.short else args.rounds)
    runs, core, pure, rss, py313_why = _measure(args, count, py313, py313_why, child_rounds, loop_args,
                                                failures, ceiling_each)
    med = {name: _median(rs) for name, rs in runs.items()}
    cmed = {name: _median(rs) for name, rs in core.items()} if core else {}
    pmed = _median(pure["tclnats_py"]) if pure else {}
    ver = sys.version.split()[0]
    loop_name = f"uvloop {__import__('uvloop').__version__}" if args.uvloop else "asyncio's"
    print(f"128-byte messages, count={count}, median of {args.rounds} rounds; Python {ver}; "
          f"event loop: {loop_name} (every client); "
          f"rates in msg/s (request: req/s); CPU in us/msg of this process")
    head = (f"{'figure':<18}{'nats-py':>11}{'tclnats_py':>12}{'ratio':>7}{'raw socket':>12}{'% of raw':>9}"
            f"{'no accel':>10}   {'CPU nats-py':>11}{'tclnats_py':>11}   {'nats-py API on tclnats_py':>26}{'ratio':>7}"
            f"   {'sync':>10}{'ratio':>7}{'% of raw':>9}")
    if cmed:
        head += f"   | {'nats-core':>10}{'tclnats_py':>11}{'ratio':>7}  (Python {py313_why}, {child_rounds} round(s))"
    print(head)
    rows = []
    for fig in _ROWS or FIGURES:
        row, line = _table_row(fig, med, pmed, cmed, core)
        rows.append(row)
        print(line)
    if not cmed:
        print(f"nats-core / nats-jetstream: not measured: {py313_why}")
    if rss:
        print(f"peak RSS of a process awaiting {20000 if args.short else 200000:,} publishes: " + ", ".join(
            f"{r['name']} (Python {r['python']}) {r['peak_rss_mb']:.1f} MB" for r in rss))
    if ceiling_each:
        print(bench_raw.each_way_line(ceiling_each))
    ws_rows: list = []
    if getattr(args, "ws_runs", None):
        ws_rows, ws_lines = _ws_table(args.ws_runs, args.ws_why, med)
        print("\n".join(ws_lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": count, "event_loop": loop_name, "rounds": runs, "figures": rows, "nats_core_rounds": core,
                       "no_accel_rounds": pure, "raw_socket_each": ceiling_each, "failures": failures,
                       "peak_rss": rss, "python": ver, "websocket": ws_rows,
                       "websocket_rounds": getattr(args, "ws_runs", None)}, f, indent=2)
    return bench_raw.exit_status("tclnats_py.compat.bench_py", failures)


if __name__ == "__main__":
    sys.exit(main())
