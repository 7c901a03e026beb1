"""The long form of the Spark checks on ``local-cluster[2,1,1024]``: executors in
their own JVMs and Python workers, so nothing may rely on state of the driver's
process.  Slow (a cluster starts): skipped unless TCLNATS_SPARK_CLUSTER=1.

    TCLNATS_SPARK_CLUSTER=1 python -m pytest -q -p no:cacheprovider tests/spark/test_spark_cluster.py
"""

import asyncio
import os

import pytest

from tests.spark_fixtures import session, stream_count  # noqa: E402  (skips without pyspark/java)
if not os.environ.get("TCLNATS_SPARK_CLUSTER"):
    pytest.skip("the local-cluster long form runs with TCLNATS_SPARK_CLUSTER=1", allow_module_level=True)

import tclnats_py  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark():
    yield from session("local-cluster[2,1,1024]", "tclnats-cluster", **{"spark.executor.memory": "768m"})


def fill(url, stream, n, start=0):
    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        if start == 0:
            await js.create_stream(stream, subjects=[f"{stream.lower()}.*"], storage="memory")
        for i in range(start, start + n):
            await js.publish_async(f"{stream.lower()}.{i % 4}", b"%d" % i)
        await js.publish_async_complete(120)
        await c.close()
    asyncio.run(go())


count = stream_count


def test_batch_read_write_and_streaming_exactly_once(spark, js_server, tmp_path):
    url = js_server.url
    fill(url, "CL1", 200_000)
    df = spark.read.format("jetstream").option("servers", url).option("stream", "CL1").load()
    agg = df.selectExpr("count(*) as n", "count(distinct seq) as d", "min(seq) as lo", "max(seq) as hi").collect()[0]
    assert (agg.n, agg.d, agg.lo, agg.hi) == (200_000, 200_000, 1, 200_000)
    # filtered, on the executors
    assert (spark.read.format("jetstream").option("servers", url).option("stream", "CL1")
            .option("subject", "cl1.3").option("minPartitions", 4).load().count()) == 50_000

    # a write from the executors
    async def mk():
        c = await tclnats_py.connect(url)
        await c.jetstream().create_stream("CL_OUT", subjects=["clo.*"], storage="memory")
        await c.close()
    asyncio.run(mk())
    df.limit(20_000).selectExpr("'clo.x' as subject", "data").repartition(4).write.format("jetstream") \
        .option("servers", url).mode("append").save()
    assert count(url, "CL_OUT") == 20_000

    # streaming into parquet from a checkpoint, twice, with more messages between
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run_once():
        q = (spark.readStream.format("jetstream").option("servers", url).option("stream", "CL1")
             .option("maxOffsetsPerTrigger", 50_000).load().selectExpr("seq").writeStream.format("parquet")
             .option("path", out).option("checkpointLocation", ckpt).trigger(availableNow=True).start())
        q.awaitTermination(600)
        assert q.exception() is None
    run_once()
    fill(url, "CL1", 30_000, start=200_000)
    run_once()
    agg = spark.read.parquet(out).selectExpr("count(*) as n", "count(distinct seq) as d").collect()[0]
    assert (agg.n, agg.d) == (230_000, 230_000)
