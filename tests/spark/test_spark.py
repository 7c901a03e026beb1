"""JetStream as Spark DataFrames, on a local[2] Spark session and a real server."""

import asyncio

import pytest

from tests.spark_fixtures import make_stream, session  # noqa: E402  (skips without pyspark/java)

import tclnats_py  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    yield from session("local[2]", "tclnats-tests")


def publish(url, stream, subjects, messages, headers=None):
    make_stream(url, stream, subjects)

    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        for subject, data in messages:
            await js.publish_async(subject, data, headers)
        await js.publish_async_complete(30)
        await c.close()
    asyncio.run(go())


def test_batch_read_everything_in_order(spark, js_server):
    msgs = [(f"sp.{i % 3}", bytes([i % 256]) * (i % 5 + 1)) for i in range(300)]
    publish(js_server.url, "SP_BATCH", ["sp.*"], msgs, headers={"H": ["a", "b"]})
    df = (spark.read.format("jetstream").option("servers", js_server.url).option("stream", "SP_BATCH")
          .option("partitions", 3).load())
    rows = df.collect()
    assert len(rows) == 300
    assert df.rdd.getNumPartitions() == 3
    assert [r.seq for r in sorted(rows, key=lambda r: r.seq)] == list(range(1, 301))
    by_seq = {r.seq: r for r in rows}
    assert all(bytes(by_seq[i + 1].data) == msgs[i][1] and by_seq[i + 1].subject == msgs[i][0] for i in range(300))
    assert by_seq[1].headers == {"H": ["a", "b"]} and by_seq[1].stream == "SP_BATCH"
    # within a partition, rows come in stream order
    per_part = df.rdd.mapPartitions(lambda it: [[r.seq for r in it]]).collect()
    assert all(p == sorted(p) for p in per_part)
    # a subject filter and a sequence range
    sub = (spark.read.format("jetstream").option("servers", js_server.url).option("stream", "SP_BATCH")
           .option("subject", "sp.1").option("startSeq", 100).option("endSeq", 199).option("decode", "true").load())
    got = sub.collect()
    assert sorted(r.seq for r in got) == [s for s in range(100, 200) if (s - 1) % 3 == 1]
    assert "value" in sub.columns


def test_option_errors_on_the_driver(spark, js_server):
    # each one at load(), before any task: the error's code and the option it is about
    with pytest.raises(Exception) as e:
        spark.read.format("jetstream").option("servers", js_server.url).option("stream", "NOPE").load()
    assert "ErrStreamNotFound" in str(e.value) and "NOPE" in str(e.value)
    with pytest.raises(Exception) as e:
        spark.read.format("jetstream").option("stream", "X").load()
    assert "ErrInvalidArg" in str(e.value) and "servers" in str(e.value)
    with pytest.raises(Exception) as e:
        spark.read.format("jetstream").option("servers", "nats://127.0.0.1:1").option("stream", "X").load()
    assert "unreachable at nats://127.0.0.1:1" in str(e.value)


def test_streaming_read_exactly_once_across_restart(spark, js_server, tmp_path):
    publish(js_server.url, "SP_STREAM", ["ss.*"], [("ss.a", f"m{i}".encode()) for i in range(50)])
    out = str(tmp_path / "out")
    ckpt = str(tmp_path / "ckpt")

    def run_once():
        df = (spark.readStream.format("jetstream").option("servers", js_server.url).option("stream", "SP_STREAM")
              .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", 20).load())
        q = (df.selectExpr("seq", "cast(data as string) as body").writeStream.format("parquet")
             .option("path", out).option("checkpointLocation", ckpt).trigger(availableNow=True).start())
        q.awaitTermination(120)
    run_once()

    async def more():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        for i in range(50, 80):
            await js.publish("ss.a", f"m{i}".encode())
        await c.close()
    asyncio.run(more())
    run_once()  # restarted from the checkpoint: only the new messages
    rows = spark.read.parquet(out).collect()
    assert sorted(r.seq for r in rows) == list(range(1, 81))  # every message exactly once
    assert {r.body for r in rows} == {f"m{i}" for i in range(80)}


def test_write_retried_task_makes_no_duplicates(spark, js_server):
    publish(js_server.url, "SP_OUT", ["out.*"], [])
    df = spark.createDataFrame([(f"out.{i % 2}", f"row{i}".encode()) for i in range(40)], "subject string, data binary")
    writer = (df.write.format("jetstream").option("servers", js_server.url).option("writeId", "job-1")
              .mode("append"))
    writer.save()
    writer.save()  # the same job again, as a retried task would: same message ids

    async def count():
        c = await tclnats_py.connect(js_server.url)
        info = await c.jetstream().stream_info("SP_OUT")
        await c.close()
        return info["state"]["messages"]
    assert asyncio.run(count()) == 40


def test_kv_bucket_as_a_table(spark, js_server):
    async def fill():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        kv = await js.create_key_value("SP_KV", history=3, storage="memory")
        await kv.put("a", b"1")
        await kv.put("a", b"2")
        await kv.put("b", b"x")
        await kv.delete("b")
        await c.close()
    asyncio.run(fill())
    cur = spark.read.format("jetstream-kv").option("servers", js_server.url).option("bucket", "SP_KV").load()
    rows = {r.key: r for r in cur.collect()}
    assert bytes(rows["a"].value) == b"2" and rows["b"].operation == "DEL"
    hist = (spark.read.format("jetstream-kv").option("servers", js_server.url).option("bucket", "SP_KV")
            .option("history", "true").load())
    assert hist.count() == 4
