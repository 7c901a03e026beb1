"""Spark benchmark: a batch read of N 128-byte messages through the jetstream
source on local[2], against one process reading the same stream with a pull
fetch loop, in the same run: nats-py's (``pull_subscribe(...).fetch(1000)``)
and tclnats_py's asyncio face's (``consumer.fetch(1000)``), each timed as often
as each Spark figure (ratios against their best runs); plus the streaming
micro-batch time.  Each Spark figure is taken in each of the source's read
modes (``--modes``: readMode consumer, an ephemeral pull consumer per task,
and direct, batch direct gets of ADR-31; the stream has allow_direct), and
beside the fetch loops stand single-process loops of batch direct gets: the
asyncio face's ``stream.get_batch(5000, seq=...)`` and the Spark reader's
own code in each mode.

    python -m tclnats_py.compat.bench_spark [--count 1000000] [--partitions 2,4] [--action count,sum]
                                            [--modes consumer,direct]
    python -m tclnats_py.compat.bench_spark --faults [--kills 3] [--fault-count 200000]

Actions timed on the Spark side (each a full read of the stream, from planning
to the result on the driver; the session's first query is timed apart, the
others follow it in the same session):

* ``count``: ``df.count()``: every row crosses from the Python workers to the
  JVM as Arrow batches (the Python data source API has no column pruning), the
  JVM counts them without looking at the values.
* ``sum``: ``df.agg(sum(length(data)), count(distinct subject)...)``: also reads
  the data and subject columns in the JVM, as a user's query would.

``--cpu`` prints the CPU seconds each process group used in each phase
(driver Python, JVM, Python workers, nats-server), read from /proc.

``--faults`` is the long form of the fault checks instead: a streaming query
(jetstream -> parquet, maxOffsetsPerTrigger 20000, local[2]) run by a driver
process that is killed with SIGKILL (its whole process group: Python, JVM,
workers) ``--kills`` times while messages keep arriving, then run to the end
with availableNow: the rows in the table must be the messages published, with
no duplicate.  Then a batch read during which nats-server restarts, on a
local[2] master (one try per task): every message once.
"""

import argparse
import asyncio
import os
import sys
import time


async def _fill(url, n):
    import tclnats_py
    c = await tclnats_py.connect(url)
    js = c.jetstream()
    await js.create_stream("BENCH_SPARK", subjects=["bs.*"], storage="memory", allow_direct=True)
    payload = b"x" * 128
    for i in range(0, n, 5000):
        for _ in range(min(5000, n - i)):
            await js.publish_async("bs.x", payload)
        await js.publish_async_complete(120)
    await c.close()


async def _fetch_all(url, n):
    import tclnats_py
    c = await tclnats_py.connect(url)
    js = c.jetstream()
    cons = await js.create_consumer("BENCH_SPARK", ack_policy="none", mem_storage=True, inactive_threshold=30.0)
    got = 0
    t = time.perf_counter()
    while got < n:
        msgs = await cons.fetch(1000, expires=1.0)
        if not msgs:
            break
        got += len(msgs)
    dt = time.perf_counter() - t
    await c.close()
    return got, dt


async def _natspy_fetch_all(url, n):
    """The same loop with nats-py (the official Python client), if installed."""
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig
    nc = await nats.connect(url)
    js = nc.jetstream()
    psub = await js.pull_subscribe("", stream="BENCH_SPARK",
                                   config=ConsumerConfig(ack_policy=AckPolicy.NONE, mem_storage=True,
                                                         inactive_threshold=30.0))
    got = 0
    t = time.perf_counter()
    while got < n:
        try:
            msgs = await psub.fetch(1000, timeout=2.0)
        except nats.errors.TimeoutError:
            break
        got += len(msgs)
    dt = time.perf_counter() - t
    await psub.unsubscribe()
    await nc.close()
    return got, dt


async def _direct_get_all(url, n, batch=5000):
    """The asyncio face reading the stream by batch direct gets, ``batch`` per request."""
    import tclnats_py
    c = await tclnats_py.connect(url)
    stream = await c.jetstream().stream("BENCH_SPARK")
    got, seq = 0, 1
    t = time.perf_counter()
    while got < n:
        before = got
        async for m in stream.get_batch(min(batch, n - got), seq=seq):
            got += 1
            seq = m.seq + 1
        if got == before:
            break
    dt = time.perf_counter() - t
    await c.close()
    return got, dt


# ------------------------------------------------------------------ CPU per process group
_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _procs():
    """{pid: (ppid, comm/cmdline, cpu seconds incl. reaped children)}"""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        rest = st[st.rfind(")") + 2:].split()
        ppid = int(rest[1])
        cpu = sum(int(x) for x in rest[11:15]) / _TCK  # utime stime cutime cstime
        out[int(d)] = (ppid, cmd, cpu)
    return out


def _cpu_by_group(server_pid):
    me = os.getpid()
    procs = _procs()
    groups = {"driver python": 0.0, "JVM": 0.0, "Python workers": 0.0, "nats-server": 0.0}

    def ancestors(pid):
        seen = []
        while pid in procs and pid > 1:
            seen.append(pid)
            pid = procs[pid][0]
        return seen

    for pid, (_ppid, cmd, cpu) in procs.items():
        chain = ancestors(pid)
        if pid == server_pid:
            groups["nats-server"] += cpu
        elif pid == me:
            # own reaped children are none (Spark's JVM and the server still run)
            groups["driver python"] += cpu
        elif me in chain[1:]:
            if "java" in cmd.split(" ")[0]:
                groups["JVM"] += cpu
            elif "python" in cmd or "pyspark" in cmd:
                groups["Python workers"] += cpu
    return groups


class _Cpu:
    def __init__(self, server_pid, enabled):
        self.server_pid, self.enabled = server_pid, enabled
        self.rows = []

    def phase(self, name, fn):
        if not self.enabled:
            return fn()
        before = _cpu_by_group(self.server_pid)
        t = time.perf_counter()
        r = fn()
        wall = time.perf_counter() - t
        after = _cpu_by_group(self.server_pid)
        self.rows.append((name, wall, {k: after[k] - before[k] for k in after}))
        return r

    def report(self):
        if not self.rows:
            return
        keys = list(self.rows[0][2])
        print()
        print(f"{'CPU seconds per phase':<34}{'wall':>7}" + "".join(f"{k:>16}" for k in keys))
        for name, wall, d in self.rows:
            print(f"{name:<34}{wall:>7.2f}" + "".join(f"{d[k]:>16.2f}" for k in keys))


def _parse_args(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--partitions", default="2,4", help="comma-separated partition counts to time")
    ap.add_argument("--action", default="count,sum", help="count and/or sum (see the module doc)")
    ap.add_argument("--modes", default="consumer,direct", help="the source's readMode values to time")
    ap.add_argument("--no-stream", action="store_true", help="skip the streaming micro-batch figure")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds per process group and phase")
    ap.add_argument("--repeat", type=int, default=2, help="time each (partitions, action) this many times")
    ap.add_argument("--faults", action="store_true", help="the long form of the fault checks (see the module doc)")
    ap.add_argument("--kills", type=int, default=3, help="--faults: driver kills (at least 3)")
    ap.add_argument("--fault-count", type=int, default=200_000, help="--faults: messages at the start")
    ap.add_argument("--_driver", nargs=4, metavar=("URL", "OUT", "CKPT", "MODE"), help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def _baselines(url, count, repeat, cpu, modes) -> dict:
    """The single-process figures: tclnats_py's and nats-py's fetch loops and
    tclnats_py's batch direct get loop, each timed ``repeat`` times (ratios
    are taken against the best run), and the Spark source's own partition
    reader over the whole stream in each read mode."""
    import tclnats_py.spark.datasource as tspark
    fetch_runs = [cpu.phase("single process fetch loop", lambda: asyncio.run(_fetch_all(url, count)))
                  for _ in range(repeat)]
    try:
        import nats  # noqa: F401
        natspy_runs = [cpu.phase("single process nats-py fetch loop",
                                 lambda: asyncio.run(_natspy_fetch_all(url, count)))
                       for _ in range(repeat)]
    except ImportError:
        natspy_runs = []
    direct_runs = [cpu.phase("single process direct get loop", lambda: asyncio.run(_direct_get_all(url, count)))
                   for _ in range(repeat)]
    # for comparison: one process running the Spark source's own partition
    # reader (blocking socket, Arrow batches) over the whole stream, no Spark
    import pyarrow.compute  # noqa: F401  (imported before the first mode's clock starts)

    from tclnats_py.spark.options import parse_conn
    raw = {}
    for mode in modes:
        rc = tspark._ReadConfig({"servers": url, "stream": "BENCH_SPARK", "readmode": mode},
                                parse_conn({"servers": url}))
        rc.mode = mode
        runs = []
        for _ in range(repeat):
            t = time.perf_counter()
            n = cpu.phase(f"single process, Spark reader, {mode}", lambda: sum(
                b.num_rows for b in tspark._arrow_batches(rc, 1, count)))
            runs.append((n, time.perf_counter() - t))
        raw[mode] = runs
    return {"fetch_runs": fetch_runs, "got": fetch_runs[0][0], "single": max(g / dt for g, dt in fetch_runs),
            "natspy_runs": natspy_runs, "natspy": max((g / dt for g, dt in natspy_runs), default=0.0),
            "direct_runs": direct_runs, "raw": raw}


def _spark_figures(spark, url, parts, actions, repeat, cpu, modes) -> tuple:
    """((rows, rate) of the session's first query, [(mode, partitions,
    action, rows, rate)] of the others).  The modes take turns at going first
    within each (partitions, action), run after run, so that with --repeat 2
    or more neither always has the warmer JVM."""
    from pyspark.sql import functions as F
    results = []

    def reader(p, mode="consumer"):
        return (spark.read.format("jetstream").option("servers", url).option("stream", "BENCH_SPARK")
                .option("partitions", p).option("readMode", mode))

    # the session's first query, timed apart: it also starts the Python
    # workers of both task slots (reused afterwards: Spark's default
    # spark.python.worker.reuse=true), loads the JVM's classes for the
    # Python data source and Arrow path and runs them before the JIT has
    # compiled them
    t = time.perf_counter()
    n = cpu.phase("Spark count, 2 partitions, 1st query", lambda: reader(2).load().count())
    cold = (n, n / (time.perf_counter() - t))
    for i, p in enumerate(p for p in parts for _ in range(repeat)):
        for action in actions:
            for mode in (modes if i % 2 == 0 else modes[::-1]):
                if action == "count":
                    run = lambda p=p, mode=mode: reader(p, mode).load().count()  # noqa: E731
                else:
                    def run(p=p, mode=mode):
                        row = reader(p, mode).load().agg(F.count("*").alias("n"),
                                                         F.sum(F.length("data")).alias("b"),
                                                         F.countDistinct("subject").alias("s")).collect()[0]
                        return row["n"]
                t = time.perf_counter()
                n = cpu.phase(f"Spark {action}, {p} partitions, {mode}", run)
                results.append((mode, p, action, n, n / (time.perf_counter() - t)))
    return cold, results


def _micro_batches(spark, url, mode="consumer") -> list:
    """The sorted durations (ms) of a streaming query's micro-batches, the first left out."""
    q = (spark.readStream.format("jetstream").option("servers", url).option("stream", "BENCH_SPARK")
         .option("maxMessagesPerTrigger", 10000).option("readMode", mode).load().writeStream.format("noop")
         .trigger(processingTime="0 seconds").start())
    durations: list = []
    deadline = time.time() + 60
    while len(durations) < 10 and time.time() < deadline:
        p = q.lastProgress
        if p and p.get("batchId") is not None and (not durations or durations[-1][0] != p["batchId"]):
            durations.append((p["batchId"], p["durationMs"].get("triggerExecution", 0)))
        time.sleep(0.2)
    q.stop()
    return sorted(d for _, d in durations[1:]) or [0]


def _report(base: dict, cold, results, ms) -> None:
    single, natspy, natspy_runs = base["single"], base["natspy"], base["natspy_runs"]
    print(f"{'figure':<34}{'value':>14}")
    print(f"{'Spark local[2] count, 1st query':<34}{cold[1]:>12,.0f}/s  ({cold[0]} rows)  ratio {cold[1] / single:.2f}x"
          "  (JVM and Python workers start cold)")
    print(f"{'tclnats_py asyncio fetch loop':<34}{single:>12,.0f}/s  ({base['got']} messages; best of "
          + ", ".join(f"{g / dt:,.0f}" for g, dt in base["fetch_runs"]) + ")")
    if natspy_runs:
        print(f"{'nats-py pull fetch loop':<34}{natspy:>12,.0f}/s  ({natspy_runs[0][0]} messages; best of "
              + ", ".join(f"{g / dt:,.0f}" for g, dt in natspy_runs) + ")")
    else:
        print(f"{'nats-py pull fetch loop':<34}{'-':>14}  (nats-py is not installed)")
    direct_runs = base["direct_runs"]
    print(f"{'tclnats_py asyncio direct get loop':<34}{max(g / dt for g, dt in direct_runs):>12,.0f}/s  "
          f"({direct_runs[0][0]} messages, get_batch(5000); best of "
          + ", ".join(f"{g / dt:,.0f}" for g, dt in direct_runs) + ")")
    best: dict = {}
    for mode, p, action, n, rate in results:
        vs = f"  vs nats-py {rate / natspy:.2f}x" if natspy else ""
        best[(p, action, mode)] = max(rate, best.get((p, action, mode), 0.0))
        print(f"{f'Spark local[2] {action}, {p} parts, {mode}':<44}{rate:>12,.0f}/s  ({n} rows)  "
              f"vs asyncio face {rate / single:.2f}x{vs}")
    for (p, action, mode), rate in sorted(best.items()):
        if mode != "consumer" and (p, action, "consumer") in best:
            ratio = rate / best[(p, action, "consumer")]
            print(f"{f'  best {action}, {p} parts: {mode} / consumer':<44}{ratio:>12.2f}x")
    for mode, runs in base["raw"].items():
        print(f"{f'single process, Spark reader, {mode}':<44}{max(g / dt for g, dt in runs):>12,.0f}/s  "
              f"({runs[0][0]} rows, Arrow batches, no Spark; best of "
              + ", ".join(f"{g / dt:,.0f}" for g, dt in runs) + ")")
    for mode, m in ms.items():
        print(f"{f'streaming micro-batch (10k msgs), {mode}':<44}{m[len(m) // 2]:>11} ms  (median of {len(m)})")


def main(argv=None) -> int:
    args = _parse_args(argv)
    if args._driver:
        return _driver(*args._driver)
    if args.faults:
        return _faults(max(3, args.kills), args.fault_count)
    parts = [int(p) for p in args.partitions.split(",")]
    actions = args.action.split(",")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    from pyspark.sql import SparkSession

    import tclnats_py.spark.datasource as tspark
    from tclnats_py.testing.server import NatsServer
    with NatsServer(jetstream=True) as srv:
        cpu = _Cpu(srv.pid, args.cpu)
        t = time.perf_counter()
        asyncio.run(_fill(srv.url, args.count))
        print(f"published {args.count} messages in {time.perf_counter() - t:.1f} s", flush=True)
        base = _baselines(srv.url, args.count, args.repeat, cpu, modes)
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        tspark.register(spark)
        cold, results = _spark_figures(spark, srv.url, parts, actions, args.repeat, cpu, modes)
        ms = {} if args.no_stream else {mode: _micro_batches(spark, srv.url, mode) for mode in modes}
        spark.stop()
    _report(base, cold, results, ms)
    cpu.report()
    return 0


# ------------------------------------------------------------------ --faults
def _session(app):
    from pyspark.sql import SparkSession

    import tclnats_py.spark.datasource as tspark
    spark = (SparkSession.builder.master("local[2]").appName(app).config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tspark.register(spark)
    return spark


def _driver(url, out, ckpt, mode):
    """A streaming driver of its own (killed by the parent, or run to the end)."""
    import json
    spark = _session("bench-spark-driver")
    q = (spark.readStream.format("jetstream").option("servers", url).option("stream", "BENCH_FAULTS")
         .option("maxOffsetsPerTrigger", 20000).load().selectExpr("seq", "data").writeStream.format("parquet")
         .option("path", out).option("checkpointLocation", ckpt))
    if mode == "forever":
        q.trigger(processingTime="0 seconds").start().awaitTermination()
        return 0
    q = q.trigger(availableNow=True).start()
    q.awaitTermination()
    row = spark.read.parquet(out).selectExpr("count(*) as n", "count(distinct seq) as d", "min(seq) as lo",
                                             "max(seq) as hi").collect()[0]
    print("RESULT " + json.dumps({"rows": row.n, "distinct": row.d, "min": row.lo, "max": row.hi}), flush=True)
    spark.stop()
    return 0


async def _publish(url, stream, n, create=False):
    import tclnats_py
    c = await tclnats_py.connect(url)
    js = c.jetstream()
    if create:
        await js.create_stream(stream, subjects=[stream.lower() + ".*"], storage="file")
    payload = b"f" * 128
    for _ in range(n):
        await js.publish_async(stream.lower() + ".x", payload)
    await js.publish_async_complete(120)
    await c.close()


async def _consumers(url, stream):
    import tclnats_py
    c = await tclnats_py.connect(url)
    try:
        return await c.jetstream().consumer_names(stream)
    finally:
        await c.close()


def _commits(ckpt):
    try:
        return len([f for f in os.listdir(os.path.join(ckpt, "commits")) if f.isdigit()])
    except OSError:
        return 0


def _kill_drivers(url, mod, out, ckpt, kills, published):
    """Start a streaming driver ``kills`` times, each killed (its process
    group) mid-batch while more messages arrive; the messages published then."""
    import random
    import signal
    import subprocess
    import threading
    rng = random.Random(16)
    for k in range(kills):
        before = _commits(ckpt)
        p = subprocess.Popen([sys.executable, "-m", mod, "--_driver", url, out, ckpt, "forever"],
                             start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 180
        while time.time() < deadline and _commits(ckpt) <= before and p.poll() is None:
            time.sleep(0.2)
        # more messages arrive while the driver runs; then it dies mid-batch at some point
        more = threading.Thread(target=lambda: asyncio.run(_publish(url, "BENCH_FAULTS", 10_000)))
        more.start()
        time.sleep(rng.uniform(0.5, 3.0))
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        more.join()
        published += 10_000
        print(f"kill {k + 1}: driver killed after {_commits(ckpt)} committed batches "
              f"({_commits(ckpt) - before} in this run); {published} messages published", flush=True)
    return published


def _final_run(url, mod, out, ckpt, kills, published, figures):
    """Run the driver to the end (availableNow); whether the table holds every
    message once (its figures added to ``figures``)."""
    import json
    import subprocess
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", mod, "--_driver", url, out, ckpt, "availableNow"],
                       capture_output=True, text=True, timeout=900)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if not line:
        print(r.stdout[-2000:], r.stderr[-4000:])
        raise SystemExit("the final driver run gave no result")
    res = json.loads(line[0][7:])
    figures.append(("driver kills (SIGKILL, process group)", str(kills)))
    figures.append(("messages published", f"{published:,}"))
    figures.append(("rows in the parquet table", f"{res['rows']:,}"))
    figures.append(("duplicates (rows - distinct seq)", f"{res['rows'] - res['distinct']:,}"))
    figures.append(("missing (published - distinct seq)", f"{published - res['distinct']:,}"))
    figures.append(("final availableNow run", f"{time.perf_counter() - t:.1f} s"))
    return res["rows"] == res["distinct"] == published and res["min"] == 1 and res["max"] == published


def _restart_check(srv, published, figures):
    """A batch read during which the server restarts, one try per task;
    whether it read every message once (its figures added to ``figures``)."""
    import threading
    spark = _session("bench-spark-restart")
    df = (spark.read.format("jetstream").option("servers", srv.url).option("stream", "BENCH_FAULTS")
          .option("minPartitions", 2).option("fetchOffset.numRetries", 30)
          .option("fetchOffset.retryIntervalMs", 200).load())

    def slow(rows):
        for i, row in enumerate(rows):
            if i % 2000 == 0:
                time.sleep(0.05)
            yield row.seq
    result = {}

    def read():
        try:
            result["seqs"] = df.rdd.mapPartitions(slow).collect()
        except Exception as e:  # printed below
            result["error"] = e
    t = time.perf_counter()
    th = threading.Thread(target=read)
    th.start()
    # restart once the tasks read (their consumers exist on the stream)
    deadline = time.time() + 120
    while time.time() < deadline and th.is_alive() and not asyncio.run(_consumers(srv.url, "BENCH_FAULTS")):
        time.sleep(0.05)
    mid = th.is_alive() and bool(asyncio.run(_consumers(srv.url, "BENCH_FAULTS")))
    r0 = time.perf_counter()
    srv.restart()
    restart_s = time.perf_counter() - r0
    th.join(600)
    took = time.perf_counter() - t
    spark.stop()
    if "error" in result:
        print("restart check failed:", str(result["error"])[:3000])
        seqs = []
    else:
        seqs = result["seqs"]
    figures.append(("restart check: server restarted mid-read", f"{mid} (restart {restart_s:.1f} s)"))
    figures.append(("restart check: rows / distinct / published",
                    f"{len(seqs):,} / {len(set(seqs)):,} / {published:,}"))
    figures.append(("restart check: read time", f"{took:.1f} s"))
    return mid and len(seqs) == len(set(seqs)) == published


def _faults(kills, count):
    import shutil
    import tempfile

    from tclnats_py.testing.server import NatsServer
    mod = __spec__.name if __spec__ else "tclnats_py.compat.bench_spark"
    tmp = tempfile.mkdtemp(prefix="bench-spark-faults-")
    out, ckpt = os.path.join(tmp, "out"), os.path.join(tmp, "ckpt")
    figures = []
    with NatsServer(jetstream=True) as srv:
        t = time.perf_counter()
        asyncio.run(_publish(srv.url, "BENCH_FAULTS", count, create=True))
        print(f"published {count} messages in {time.perf_counter() - t:.1f} s (file storage)", flush=True)
        published = _kill_drivers(srv.url, mod, out, ckpt, kills, count)
        ok1 = _final_run(srv.url, mod, out, ckpt, kills, published, figures)
        ok2 = _restart_check(srv, published, figures)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'figure':<44}value")
    for name, value in figures:
        print(f"{name:<44}{value}")
    print("exactly-once across driver kills:", "OK" if ok1 else "FAILED")
    print("read across a server restart:", "OK" if ok2 else "FAILED")
    return 0 if ok1 and ok2 else 1

if __name__ == "__main__":
    sys.exit(main())
