"""Python side of the benchmark: tclnats_py's asyncio API against nats-py, same
server, same run, 128-byte messages.

    python -m tclnats_py.compat.bench_py [--count N] [--rounds R] [--short] [--json out.json]

Figures: publish (hand COUNT messages to the client, then flush), delivery to a
callback on a second connection, request round trips to a responder on the
second connection, the same with up to 256 requests in flight (request_async),
and JetStream publishes through each library's JetStream API: ``js.publish``
awaited one at a time (js_publish), and ``js.publish_async`` for COUNT
messages followed by waiting for every ack (js_publish_async; each library
with its default limit of acks in flight, 4000 for both).

The two libraries take turns, R rounds (default 3), the order swapped every
round, and each figure is the median of its rounds: on a small shared machine
single runs of the latency-bound figures (request, js_publish) vary by 2x
from run to run, and whoever runs second in a fixed order is favoured.  The
last two columns are the CPU time of this process (both connections) per
message: where the rates are close and the CPU is not, the figure is bound by
waiting for the server, not by the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

PAYLOAD = b"x" * 128


class Side:
    """The few calls the workload needs, for either client library."""

    def __init__(self, name):
        self.name = name

    async def connect(self, url):
        if self.name == "tclnats_py":
            import tclnats_py
            return await tclnats_py.connect(url)
        import nats
        return await nats.connect(url)

    async def publish(self, c, subject, data, reply=None):
        if self.name == "tclnats_py":
            await c.publish(subject, data, reply)  # waits only when the socket is behind
        else:
            await c.publish(subject, data, reply=reply or "")

    async def flush(self, c):
        await c.flush()
        if self.name != "tclnats_py":
            # nats-py's PING can overtake a SUB still in its pending buffer: a second
            # round trip makes sure the server has the subscription
            await c.flush()

    async def request(self, c, subject, data, timeout=5):
        return await c.request(subject, data, timeout=timeout)

    async def js_publish(self, js, subject, data):
        return await js.publish(subject, data)

    async def js_publish_async_all(self, js, subject, data, n):
        """n asynchronous JetStream publishes, then every ack."""
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


async def workload(side: Side, url: str, count: int) -> dict:
    out = {}
    a = await side.connect(url)
    b = await side.connect(url)
    tag = side.name.replace("-", "_")

    t, c = time.perf_counter(), time.process_time()
    for _ in range(count):
        await side.publish(a, f"bp.{tag}.pub", PAYLOAD)
    await side.flush(a)
    out["publish"] = _figure(count, t, c)

    done = asyncio.get_running_loop().create_future()
    got = 0

    async def on_msg(msg):
        nonlocal got
        got += 1
        if got == count and not done.done():
            done.set_result(None)
    await b.subscribe(f"bp.{tag}.deliver", cb=on_msg)
    await side.flush(b)
    t, c = time.perf_counter(), time.process_time()
    for _ in range(count):
        await side.publish(a, f"bp.{tag}.deliver", PAYLOAD)
    await side.flush(a)
    await asyncio.wait_for(done, 120)
    out["deliver"] = _figure(count, t, c)

    async def echo(msg):
        await side.publish(b, msg.reply, msg.data)
    await b.subscribe(f"bp.{tag}.svc", cb=echo)
    await side.flush(b)
    rounds = max(500, count // 50)
    t, c = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        await side.request(a, f"bp.{tag}.svc", PAYLOAD)
    out["request"] = _figure(rounds, t, c)
    n_conc = max(2000, count // 10)
    sem = asyncio.Semaphore(256)

    async def one():
        async with sem:
            await side.request(a, f"bp.{tag}.svc", PAYLOAD)
    t, c = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(n_conc)))
    out["request_async"] = _figure(n_conc, t, c)

    # JetStream through the API subjects (the same requests for both clients)
    stream = f"BP_{tag.upper()}"
    await side.request(a, f"$JS.API.STREAM.DELETE.{stream}", b"")
    cfg = json.dumps({"name": stream, "subjects": [f"bpjs.{tag}.>"], "storage": "memory"}).encode()
    await side.request(a, f"$JS.API.STREAM.CREATE.{stream}", cfg)
    js = a.jetstream()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        ack = await side.js_publish(js, f"bpjs.{tag}.x", PAYLOAD)
        assert ack.seq > 0
    out["js_publish"] = _figure(rounds, t, c)
    n_async = max(5000, count // 2)
    t, c = time.perf_counter(), time.process_time()
    await side.js_publish_async_all(js, f"bpjs.{tag}.y", PAYLOAD, n_async)
    out["js_publish_async"] = _figure(n_async, t, c)
    info = json.loads((await side.request(a, f"$JS.API.STREAM.INFO.{stream}", b"")).data)
    assert info["state"]["messages"] == rounds + n_async, info["state"]
    await side.request(a, f"$JS.API.STREAM.DELETE.{stream}", b"")
    await a.close()
    await b.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100000)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    count = 5000 if args.short else args.count
    from tclnats_py.testing.server import NatsServer
    runs: dict = {"nats-py": [], "tclnats_py": []}
    with NatsServer(jetstream=True) as srv:
        for r in range(max(1, args.rounds)):
            order = ("nats-py", "tclnats_py") if r % 2 == 0 else ("tclnats_py", "nats-py")
            for name in order:
                runs[name].append(asyncio.run(workload(Side(name), srv.url, count)))
    med = {name: {fig: (statistics.median(run[fig][0] for run in rs), statistics.median(run[fig][1] for run in rs))
                   for fig in rs[0]} for name, rs in runs.items()}
    print(f"{'figure':<18}{'nats-py':>14}{'tclnats_py':>14}{'ratio':>8}   {'CPU us/msg: nats-py':>20}{'tclnats_py':>11}"
          f"   (128-byte messages, count={count}, median of {len(runs['nats-py'])} rounds)")
    rows = []
    for fig in med["tclnats_py"]:
        (o, oc), (t, tc) = med["nats-py"][fig], med["tclnats_py"][fig]
        rows.append({"figure": fig, "nats-py": o, "tclnats_py": t, "ratio": t / o, "cpu_us_nats_py": oc,
                     "cpu_us_tclnats_py": tc})
        print(f"{fig:<18}{o:>14,.0f}{t:>14,.0f}{t / o:>7.2f}x   {oc:>20.1f}{tc:>11.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": count, "rounds": runs, "figures": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
