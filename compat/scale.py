"""Past one machine: a Spark standalone cluster (a master and two workers from
``spark-class``, the driver in its own process) on a 3-node NATS cluster with
R3 streams, nodes killed under it, and what each executor and partition adds.

    python -m tclnats_py.compat.scale [--parts faults,throughput] [--faults LIST]
        [--messages N] [--publishes N] [--kv N] [--stream-messages N] [--throughput-messages N]
        [--write-messages N] [--partitions 1,2,4,8] [--executors 1,2] [--rounds R]
        [--json out.json] [--plot out.svg]

The faults (``--faults``, all by default), each with an exact count of every
message (nothing lost, nothing twice):

- ``aio``, ``tcl``, ``sync`` (the blocking face; skipped on a tclnats_py
  without ``tclnats_py.sync.connect``): a face publishing ``--publishes`` JetStream messages with message ids while
  the stream's leader is killed 5 times (retrying a failed publish with the
  same id); the stream read back; ``aio_async`` the same with the asyncio
  face's publish_async, 500 acks in flight when a leader dies, every future
  ended by an ack or an error; ``tcl_async`` the Tcl face's ``publish_msg
  -callback`` in the same way, every callback called;
- ``kv``: ``--kv`` puts with a watcher on another connection across a leader kill;
- ``batch``: a Spark batch read of ``--messages`` while the stream's leader is
  killed; the read completes or fails with an error, and a retry counts exactly;
- ``streaming``: a streaming query from an R3 stream to another through 3
  leader kills and a node restart, then a worker JVM kill, then a driver kill
  and its restart from the checkpoint.

The throughput table (``--parts throughput``): the Spark source's batch read
of ``--throughput-messages`` and the sink's batch write of
``--write-messages`` against partitions and executors, on one nats-server
and on the cluster, beside the raw-socket JetStream fetch ceiling of each
measured in the same run (compat/bench_raw.py's pull loop); each target's
best read against that ceiling and the most executors against one, and the
CPU seconds each process spent during the reads (compat/scale_profile.py:
what bounds them).

The defaults are the issue's sizes (1,000,000 messages read, 100,000
publishes per face through 5 kills, 200,000 through the streaming query) and
one round of the faults: the issue's "exact in 3 consecutive runs" is three
runs of this command, about 22 minutes each on 2 cores.  A run ends with the
time each part took; the exit status is 1 when a count is not exact.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time

from tclnats_py.compat import scale_faults as nf
from tclnats_py.compat import scale_profile as prof
from tclnats_py.compat import scale_spark as sp
from tclnats_py.testing.server import NatsCluster, NatsServer, raw_request

FAULTS = ["aio", "aio_async", "tcl", "tcl_async", "sync", "kv", "batch", "streaming"]


def _parse(argv):
    ap = argparse.ArgumentParser(prog="python -m tclnats_py.compat.scale", description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="faults,throughput", help="faults, throughput (comma-separated)")
    ap.add_argument("--faults", default=",".join(FAULTS), help=f"which faults ({', '.join(FAULTS)})")
    ap.add_argument("--messages", type=int, default=1_000_000, help="the batch read under a leader kill")
    ap.add_argument("--publishes", type=int, default=100_000, help="messages each face publishes")
    ap.add_argument("--kills", type=int, default=5, help="leader kills during each face's publishing")
    ap.add_argument("--kv", type=int, default=20_000, help="KV puts across a leader kill")
    ap.add_argument("--stream-messages", type=int, default=200_000, help="the streaming query's input")
    ap.add_argument("--throughput-messages", type=int, default=1_000_000, help="messages per throughput figure")
    ap.add_argument("--write-messages", type=int, default=200_000,
                    help="messages per write figure (the sink writes about a tenth as fast as the source reads)")
    ap.add_argument("--partitions", default="1,2,4,8")
    ap.add_argument("--executors", default="1,2")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the faults (each count exact in every one)")
    ap.add_argument("--json", help="write every count and figure here")
    ap.add_argument("--plot", help="draw the throughput figures here (.svg or .png; needs matplotlib)")
    return ap.parse_args(argv)


def fill(urls, stream: str, subject: str, n: int, size: int = 0) -> None:
    """``n`` messages on ``subject`` (the payload: the index in text, padded to ``size``)."""
    async def go():
        import tclnats_py
        c = await tclnats_py.connect(urls, max_reconnect_attempts=-1)
        js = c.jetstream(timeout=30)
        for i in range(n):
            await js.publish_async(subject, (b"%d" % i).ljust(size))
            if i % 20_000 == 19_999:
                await js.publish_async_complete(120)
        await js.publish_async_complete(120)
        await c.close()
    asyncio.run(go())


# ------------------------------------------------------------------ the Spark faults

def _count(spark, servers, stream, tries=30):
    row = (spark.read.format("jetstream").option("servers", servers).option("stream", stream)
           .option("fetchOffset.numRetries", tries).option("requestTimeoutMs", 10000).load()
           .selectExpr("count(*) as n", "count(distinct seq) as d").collect()[0])
    return row.n, row.d


def fault_batch(cluster, spark, n: int) -> dict:
    """A batch read of ``n`` messages while the stream's leader is killed a
    third into the read (a warm read untouched before it gives its length)."""
    nf.make_stream(cluster, "SCALE_BATCH", ["scale.batch"])
    t = time.monotonic()
    fill(cluster.urls, "SCALE_BATCH", "scale.batch", n)
    fill_s = time.monotonic() - t
    servers = ",".join(cluster.urls)
    _count(spark, servers, "SCALE_BATCH")  # warm: the JIT, the Python workers
    t = time.monotonic()
    first = _count(spark, servers, "SCALE_BATCH")
    took = time.monotonic() - t
    killer = nf.LeaderKiller(cluster, "SCALE_BATCH", 1)
    killed_at: list[float] = []

    def kill():
        killer.kill()
        killed_at.append(time.monotonic())
    timer = threading.Timer(took / 3, kill)
    t = time.monotonic()
    timer.start()
    try:
        n2, d2 = _count(spark, servers, "SCALE_BATCH")
        outcome = {"completed": True, "rows": n2, "distinct": d2}
    except Exception as e:  # noqa: BLE001  (the outcome: a clear failure is one of the two allowed)
        outcome = {"completed": False, "error": str(e).strip().splitlines()[0][:300]}
    ended = time.monotonic()
    outcome["seconds"] = round(ended - t, 1)
    timer.join()
    killer.finish()
    during = bool(killed_at) and killed_at[0] < ended
    cluster.wait_stream_current("SCALE_BATCH", timeout=60)
    n3, d3 = _count(spark, servers, "SCALE_BATCH")
    exact_first = outcome.get("rows") == outcome.get("distinct") == n if outcome["completed"] else True
    return {"messages": n, "fill_s": round(fill_s, 1), "untouched_read": list(first), "untouched_s": round(took, 1),
            "under_kill": outcome, "kill_at_s": round(took / 3, 1), "kill_during_the_read": during,
            "retry": [n3, d3], "ok": first == (n, n) and (n3, d3) == (n, n) and exact_first and during}


def _wait_commits(ckpt, at_least, driver, timeout=600):
    deadline = time.monotonic() + timeout
    while sp.commits(ckpt) < at_least:
        if driver.poll() is not None:
            return False  # the query ended: all was read before this fault
        if time.monotonic() > deadline:
            raise TimeoutError(f"the streaming query committed {sp.commits(ckpt)} of {at_least} batches")
        time.sleep(0.2)
    return True


def fault_streaming(cluster, spark_cluster, n: int, folder: str) -> dict:
    """A streaming query SCALE_SRC -> SCALE_OUT (the jetstream sink) through
    3 leader kills (source, sink, source) and a node restart, a worker kill
    and a driver kill; then the driver run again to the end from its
    checkpoint.  Counted: SCALE_OUT holds every payload once."""
    nf.make_stream(cluster, "SCALE_SRC", ["scale.src"])
    nf.make_stream(cluster, "SCALE_OUT", ["scale.out"])
    t = time.monotonic()
    fill(cluster.urls, "SCALE_SRC", "scale.src", n)
    fill_s = time.monotonic() - t
    servers = ",".join(cluster.urls)
    ckpt = os.path.join(folder, "ckpt")
    log = os.path.join(folder, "driver.log")
    per = max(100, n // 12)  # 7 micro-batches see the faults, the rest run after the driver's restart
    driver = sp.start_driver(spark_cluster.url, servers, "SCALE_SRC", "scale.out", ckpt, "forever", per, log)
    done: list[str] = []
    src_k = nf.LeaderKiller(cluster, "SCALE_SRC", 2)
    out_k = nf.LeaderKiller(cluster, "SCALE_OUT", 1)
    steps = [("kill SCALE_SRC's leader", src_k.kill), ("kill SCALE_OUT's leader", out_k.kill),
             ("kill SCALE_SRC's leader", src_k.kill),
             ("restart a node (SIGTERM, start)", lambda: cluster.restart(cluster.meta_leader() or 0, timeout=30)),
             ("kill worker 0 (its JVMs and Pythons)", lambda: spark_cluster.kill_worker(0)),
             ("start worker 0 again", lambda: spark_cluster.start_worker(0))]
    t = time.monotonic()
    try:
        at = 1
        for name, act in steps:
            if not _wait_commits(ckpt, at, driver):
                break
            act()
            done.append(f"{name} after {sp.commits(ckpt)} batches")
            at = sp.commits(ckpt) + 1
        if _wait_commits(ckpt, at, driver):
            sp._killpg(driver)
            done.append(f"kill the driver (its process group) after {sp.commits(ckpt)} batches")
    finally:
        if driver.poll() is None:
            sp._killpg(driver)
    src_k.finish()
    out_k.finish()
    cluster.wait_stream_current("SCALE_SRC", timeout=60)
    cluster.wait_stream_current("SCALE_OUT", timeout=60)
    spark_cluster.wait_workers(2)
    final = sp.start_driver(spark_cluster.url, servers, "SCALE_SRC", "scale.out", ckpt, "availableNow", per, log)
    rc = final.wait(1200)
    counts = nf.exact(asyncio.run(nf.read_payloads(cluster.urls, "SCALE_OUT", n)), n)
    return {"messages": n, "fill_s": round(fill_s, 1), "per_trigger": per, "faults": done, "restart_rc": rc,
            "batches": sp.commits(ckpt),
            "seconds": round(time.monotonic() - t, 1), **counts,
            "ok": counts["ok"] and rc == 0 and len(done) == len(steps) + 1}


# ------------------------------------------------------------------ throughput

def _read_rate(spark, servers, stream, n, parts, roots=None) -> tuple[float, dict]:
    """A batch read's messages per second and, with ``roots`` (the run's
    processes), its CPU profile (compat/scale_profile.py)."""
    profile = prof.CpuProfile(roots) if roots is not None and prof.available() else None
    with profile or contextlib.nullcontext():
        t = time.perf_counter()
        got = (spark.read.format("jetstream").option("servers", servers).option("stream", stream)
               .option("minPartitions", parts).load().count())
        rate = n / (time.perf_counter() - t)
    if got != n:
        raise RuntimeError(f"read {got} of {n} messages of {stream}")
    return rate, (profile.result if profile is not None else {})


def _write_rate(spark, target, replicas, servers, n, parts) -> float:
    nf.make_stream(target, "SCALE_W", ["scale.w"], replicas=replicas)
    df = spark.range(0, n, 1, parts).selectExpr("cast(cast(id as string) as binary) as data")
    t = time.perf_counter()
    df.write.format("jetstream").option("servers", servers).option("subject", "scale.w").mode("append").save()
    rate = n / (time.perf_counter() - t)
    got = nf.stream_stored(target, "SCALE_W")
    if got != n:
        raise RuntimeError(f"wrote {got} of {n} messages to SCALE_W")
    return rate


class Single:
    """One nats-server with the part of NatsCluster's JetStream API the
    throughput table uses (its streams are R1)."""

    def __init__(self, server: NatsServer):
        self.server = server
        self.servers = [server]
        self.urls = [server.url]

    def js_api(self, subject: str, body: dict | bytes = b"", timeout: float = 2.0) -> dict:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return raw_request(self.server, f"$JS.API.{subject}", data, timeout)

    def stream_info(self, stream: str, timeout: float = 2.0) -> dict:
        return self.js_api(f"STREAM.INFO.{stream}", timeout=timeout)


def _roots(spark_cluster, targets):
    """The pids whose process trees make the run: this process (the driver
    and its JVM), the Spark master and workers, every nats-server."""
    def roots():
        procs = [spark_cluster.master, *spark_cluster.workers]
        return ([os.getpid()] + [p.pid for p in procs if p is not None]
                + [s.pid for _, t, _ in targets for s in t.servers if s.pid is not None])
    return roots


def throughput(spark_cluster, targets, n, partitions, executors, budget, writes=None) -> tuple[list, dict]:
    """The table's rows and each target's raw fetch ceiling; ``targets`` are
    (name, target, replicas): a NatsCluster or a :class:`Single`.  Every read
    is profiled (row["cpu"]); writes are of ``writes`` messages (``n``)."""
    rows, ceiling = [], {}
    writes = writes or n
    roots = _roots(spark_cluster, targets)
    for name, t, replicas in targets:
        with budget(f"throughput: fill {n:,} ({name}) and its raw fetch ceiling"):
            nf.make_stream(t, "SCALE_R", ["scale.r"], replicas=replicas)
            fill(t.urls, "SCALE_R", "scale.r", n, size=128)
            ceiling[name] = round(sp.raw_fetch(t.urls[0], "SCALE_R", n))
        print(f"  raw-socket fetch ceiling, {name}: {ceiling[name]:,} msg/s", flush=True)
    for ex in executors:
        with budget(f"throughput: a session with {ex} executor(s), warm"):
            spark = sp.session(spark_cluster.url, f"tclnats-scale-{ex}", executors=ex)
        try:
            for name, t, replicas in targets:
                with budget(f"throughput: {name}, {ex} executor(s)"):
                    rows += _figures(spark, spark_cluster, name, t, replicas, n, writes, partitions, ex,
                                     ceiling[name], roots)
        finally:
            spark.stop()
    return rows, ceiling


def _figures(spark, spark_cluster, name, t, replicas, n, writes, partitions, ex, ceiling, roots) -> list:
    sp.wait_executors(spark, ex)
    servers = ",".join(t.urls)
    # warm: the JIT, a Python worker per task slot, the sink's imports
    _read_rate(spark, servers, "SCALE_R", n, max(partitions))
    _write_rate(spark, t, replicas, servers, max(1000, writes // 10), max(partitions))
    rows = []
    for p in partitions:
        read, cpu = _read_rate(spark, servers, "SCALE_R", n, p, roots)
        row = {"target": name, "executors": ex, "partitions": p, "read": round(read),
               "write": round(_write_rate(spark, t, replicas, servers, writes, p)), "cpu": cpu}
        row["read_vs_ceiling"] = round(row["read"] / ceiling, 2)
        rows.append(row)
        print(f"  {name:8} executors={ex} partitions={p}: read {row['read']:>9,} msg/s "
              f"({row['read_vs_ceiling']:.0%} of the ceiling), write {row['write']:>9,} msg/s", flush=True)
    return rows


def summary(rows: list, ceiling: dict, n: int) -> dict:
    """Per target: the best read of each executor count, the best single
    read against the raw fetch ceiling, the best read of the most executors
    against one executor's, and the profile of that read (what bounds it)."""
    out = {}
    for name in ceiling:
        best: dict = {}
        for r in rows:
            if r["target"] == name and r["read"] > best.get(r["executors"], {}).get("read", 0):
                best[r["executors"]] = r
        if not best:
            continue
        most, least = max(best), min(best)
        top = max(best.values(), key=lambda r: r["read"])
        s = {"ceiling": ceiling[name], "best": {ex: {"read": r["read"], "partitions": r["partitions"]}
                                                for ex, r in sorted(best.items())},
             "best_vs_ceiling": round(top["read"] / ceiling[name], 2),
             "executors_ratio": [most, least, round(best[most]["read"] / best[least]["read"], 2)]}
        if best[most].get("cpu"):
            s["profile"] = best[most]["cpu"]
            s["profile_line"] = prof.describe(best[most]["cpu"], n)
            s["bound"] = prof.bound(best[most]["cpu"])
        out[name] = s
    return out


# ------------------------------------------------------------------ the run

class Budget:
    """The seconds each part of the run took, in the order they ran:
    ``with budget("name"): ...``."""

    def __init__(self) -> None:
        self.parts: list[list] = []

    @contextlib.contextmanager
    def __call__(self, name: str):
        t = time.monotonic()
        try:
            yield
        finally:
            self.parts.append([name, round(time.monotonic() - t, 1)])

    def print(self, total: float) -> None:
        print(f"\ntime budget ({total / 60:.1f} min in all):")
        for name, s in self.parts:
            print(f"  {s:7.1f} s  {s / total:4.0%}  {name}")
        print(f"  {total - sum(s for _, s in self.parts):7.1f} s        the rest (starting and stopping clusters)")


class Printed(list):
    """The faults' results, each printed as it is added."""

    def append(self, item) -> None:
        print_fault(*item)
        super().append(item)


def _fault_table(args, cluster, spark_cluster, folder) -> dict:
    """fault -> (its name in the report, how to run it on ``cluster``)."""
    pub, kills = args.publishes, args.kills
    return {
        "aio": ("asyncio face: publish with msg ids, leader killed",
                lambda: nf.fault_aio_publish(cluster, pub, kills)),
        "aio_async": ("asyncio face: publish_async (500 in flight) with msg ids, leader killed",
                      lambda: nf.fault_aio_publish_async(cluster, pub, kills)),
        "tcl": ("Tcl face (stock tclsh): publish with msg ids, leader killed",
                lambda: nf.fault_tcl_publish(cluster, pub, kills)),
        "tcl_async": ("Tcl face (stock tclsh): publish -callback (500 in flight) with msg ids, leader killed",
                      lambda: nf.fault_tcl_publish_async(cluster, pub, kills)),
        "sync": ("sync face: publish with msg ids, leader killed", lambda: nf.fault_sync_publish(cluster, pub, kills)),
        "kv": ("KV put/get/watch across a leader kill", lambda: nf.fault_kv(cluster, args.kv)),
        "batch": ("Spark batch read, stream leader killed", lambda: _batch(cluster, spark_cluster, args.messages)),
        "streaming": ("Spark streaming R3 -> R3: 3 leader kills, node restart, worker kill, driver kill",
                      lambda: fault_streaming(cluster, spark_cluster, args.stream_messages,
                                              tempfile.mkdtemp(dir=folder))),
    }


def _batch(cluster, spark_cluster, n: int) -> dict:
    spark = sp.session(spark_cluster.url, "tclnats-scale-batch", executors=2)
    try:
        sp.wait_executors(spark, 2)
        return fault_batch(cluster, spark, n)
    finally:
        spark.stop()


def run_faults(args, wanted, cluster, spark_cluster, folder, budget, label="") -> list:
    """One round of the faults in ``wanted`` (in FAULTS' order): [(name,
    counts)], each printed when done and timed in ``budget``."""
    out = Printed()
    table = _fault_table(args, cluster, spark_cluster, folder)
    for key in FAULTS:
        if key not in wanted or (key == "sync" and not nf.sync_face_available()):
            continue
        name, run = table[key]
        with budget(f"{label}{key}"):
            counts = run()
        out.append((name, counts))
    return out


def print_fault(name: str, counts: dict) -> None:
    print(f"{'exact' if counts.get('ok') else 'NOT EXACT':9} {name}", flush=True)
    for k, v in counts.items():
        if k != "ok":
            print(f"            {k}: {v}", flush=True)


def print_table(rows: list, ceiling: dict, summ: dict) -> None:
    print("\n| target | executors | partitions | read msg/s | read / raw fetch | write msg/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['target']} | {r['executors']} | {r['partitions']} | {r['read']:,} | "
              f"{r['read_vs_ceiling']:.0%} | {r['write']:,} |")
    for name, c in ceiling.items():
        print(f"\n{name}: raw-socket fetch ceiling {c:,} msg/s")
        s = summ.get(name)
        if not s:
            continue
        for ex, b in s["best"].items():
            print(f"  best read with {ex} executor(s): {b['read']:,} msg/s ({b['partitions']} partitions)")
        print(f"  best read / ceiling: {s['best_vs_ceiling']:.0%}")
        most, least, ratio = s["executors_ratio"]
        print(f"  {most} executors / {least}: {ratio:.2f}x")
        if s.get("profile"):
            print(f"  profile of that {most}-executor read: {s['profile_line']}")
            print(f"  {s['bound']}")


def _throughput_part(args, spark_cluster, doc, budget) -> None:
    print("\n== throughput", flush=True)
    n = args.throughput_messages
    with NatsServer(jetstream=True) as single, NatsCluster(3, jetstream=True) as cluster:
        rows, ceiling = throughput(spark_cluster, [("single", Single(single), 1), ("cluster", cluster, 3)], n,
                                   [int(p) for p in args.partitions.split(",")],
                                   [int(e) for e in args.executors.split(",")], budget, args.write_messages)
    doc["throughput"], doc["ceiling"] = rows, ceiling
    doc["summary"] = summary(rows, ceiling, n)
    print_table(rows, ceiling, doc["summary"])


def main(argv=None) -> int:
    args = _parse(argv)
    parts = set(args.parts.split(","))
    wanted = [f for f in args.faults.split(",") if f]
    unknown = [f for f in wanted if f not in FAULTS] + [p for p in parts if p not in ("faults", "throughput")]
    if unknown:
        sys.exit(f"unknown part or fault: {', '.join(unknown)}")
    needs_spark = "throughput" in parts or {"batch", "streaming"} & set(wanted)
    doc: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}, "
                            f"Python {platform.python_version()}",
                 "messages": args.throughput_messages, "args": vars(args), "rounds": []}
    folder = tempfile.mkdtemp(prefix="tclnats-scale-")
    t0 = time.monotonic()
    failed = 0
    budget = Budget()
    spark_cluster = sp.SparkStandalone(2) if needs_spark else None
    try:
        if spark_cluster is not None:
            with budget("start the Spark standalone cluster"):
                spark_cluster.start()
            print(f"Spark standalone: master {spark_cluster.url}, 2 workers (spark-class)", flush=True)
        if "faults" in parts:
            if "sync" in wanted and not nf.sync_face_available():
                print("sync face: skipped (this tclnats_py.sync has no connect: the blocking face is not "
                      "there yet)", flush=True)
            for r in range(args.rounds):
                print(f"\n== faults, round {r + 1} of {args.rounds}", flush=True)
                with NatsCluster(3, jetstream=True) as cluster:
                    label = f"round {r + 1}: " if args.rounds > 1 else "fault: "
                    results = run_faults(args, wanted, cluster, spark_cluster, folder, budget, label)
                failed += sum(not counts.get("ok") for _, counts in results)
                doc["rounds"].append(dict(results))
        if "throughput" in parts:
            _throughput_part(args, spark_cluster, doc, budget)
    finally:
        if spark_cluster is not None:
            spark_cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
    doc["seconds"] = round(time.monotonic() - t0, 1)
    doc["budget"] = budget.parts
    budget.print(doc["seconds"])
    print(f"\n{failed} fault count(s) not exact; {doc['seconds']} s in all", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot and doc.get("throughput"):
        from tclnats_py.compat.plot import plot_scale
        plot_scale(doc, None, args.plot)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
