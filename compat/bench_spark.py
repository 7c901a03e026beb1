"""Spark benchmark: a batch read of N 128-byte messages through the jetstream
source on local[2], against one process reading the same stream with a fetch
loop (tclnats_py), in the same run; plus the streaming micro-batch time.

    python -m compat.bench_spark [--count 1000000] [--partitions 4]
"""

import argparse
import asyncio
import sys
import time


async def _fill(url, n):
    import tclnats_py
    c = await tclnats_py.connect(url)
    js = c.jetstream()
    await js.create_stream("BENCH_SPARK", subjects=["bs.*"], storage="memory")
    payload = b"x" * 128
    for i in range(0, n, 5000):
        for _ in range(min(5000, n - i)):
            js.publish_async("bs.x", payload)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args(argv)
    from pyspark.sql import SparkSession

    import tclnats_py.spark as tspark
    from tclnats_py.server import NatsServer
    with NatsServer(jetstream=True) as srv:
        t = time.perf_counter()
        asyncio.run(_fill(srv.url, args.count))
        print(f"published {args.count} messages in {time.perf_counter() - t:.1f} s")
        got, dt = asyncio.run(_fetch_all(srv.url, args.count))
        single = got / dt
        # for comparison: one process running the Spark source's own partition
        # reader (blocking socket, Arrow batches) over the whole stream
        t = time.perf_counter()
        raw = sum(b.num_rows for b in tspark._fast_arrow_batches({"servers": srv.url}, "BENCH_SPARK", 1,
                                                                   args.count, None, False))
        raw_rate = raw / (time.perf_counter() - t)
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        tspark.register(spark)
        reader = (spark.read.format("jetstream").option("servers", srv.url).option("stream", "BENCH_SPARK")
                  .option("partitions", args.partitions))
        reader.load().limit(10).collect()  # warm up the Python workers
        t = time.perf_counter()
        n = reader.load().count()
        spark_rate = n / (time.perf_counter() - t)
        q = (spark.readStream.format("jetstream").option("servers", srv.url).option("stream", "BENCH_SPARK")
             .option("maxMessagesPerTrigger", 10000).load().writeStream.format("noop")
             .trigger(processingTime="0 seconds").start())
        durations = []
        deadline = time.time() + 60
        while len(durations) < 10 and time.time() < deadline:
            p = q.lastProgress
            if p and p.get("batchId") is not None and (not durations or durations[-1][0] != p["batchId"]):
                durations.append((p["batchId"], p["durationMs"].get("triggerExecution", 0)))
            time.sleep(0.2)
        q.stop()
        spark.stop()
    ms = sorted(d for _, d in durations[1:]) or [0]
    print(f"{'figure':<34}{'value':>14}")
    print(f"{'single process fetch loop':<34}{single:>12,.0f}/s  ({got} messages)")
    print(f"{'Spark local[2] batch read':<34}{spark_rate:>12,.0f}/s  ({n} rows, {args.partitions} partitions)")
    print(f"{'ratio Spark / single':<34}{spark_rate / single:>13.2f}x")
    print(f"{'single process, Spark reader code':<34}{raw_rate:>12,.0f}/s  ({raw} rows, Arrow batches, no Spark)")
    print(f"{'streaming micro-batch (10k msgs)':<34}{ms[len(ms) // 2]:>11} ms  (median of {len(ms)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
