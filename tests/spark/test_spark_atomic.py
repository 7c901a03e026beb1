"""The sink's atomic writes (option atomic, ADR-50): each task's partition
goes as atomic batches of atomicBatchSize rows, so a task that dies
mid-partition leaves only whole batches in the stream, and its retry stores
each row once; the options checked on the driver at save()."""

import asyncio

import pytest

from tests.spark_fixtures import make_stream, session, stream_count, tspark  # noqa: F401,E402  (skips without pyspark/java)

import tclnats_py  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    # two tries per task (the retry); the rows handed on in small runs (20
    # rows, 1 KB buffers), so a task's sink has written part of its partition
    # when a row after them fails
    yield from session("local[2,2]", "tclnats-atomic", **{"spark.sql.execution.arrow.maxRecordsPerBatch": "20",
                                                          "spark.sql.execution.pandas.udf.buffer.size": "1024",
                                                          "spark.buffer.size": "1024"})


def _stream_msgs(url, stream):
    """(data, batch id, batch sequence, commit) of every message of ``stream``."""
    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        try:
            last = (await js.stream_info(stream)).state.last_seq
            out = []
            for seq in range(1, last + 1):
                m = await js.get_msg(stream, seq)
                h = m.headers or {}
                out.append((m.data, h.get("Nats-Batch-Id"), h.get("Nats-Batch-Sequence"), h.get("Nats-Batch-Commit")))
            return out
        finally:
            await c.close()
    return asyncio.run(go())


def _whole_batches(msgs):
    """batch id -> its size, after checking that each batch in the stream is
    whole: sequences 1..n, the n-th with the commit header."""
    batches: dict = {}
    for _, bid, seq, commit in msgs:
        assert bid is not None, "a message outside any atomic batch"
        batches.setdefault(bid, []).append((int(seq), commit))
    for bid, parts in batches.items():
        assert [s for s, _ in parts] == list(range(1, len(parts) + 1)), (bid, parts)
        assert [c for _, c in parts] == [None] * (len(parts) - 1) + ["1"], (bid, parts)
    return {bid: len(parts) for bid, parts in batches.items()}


def _writer(df, url, **opts):
    w = df.write.format("jetstream").option("servers", url).mode("append")
    for k, v in opts.items():
        w = w.option(k, v)
    return w


@pytest.mark.feature("atomic_batch")
def test_atomic_write_stores_whole_batches(spark, js_server):
    url = js_server.url
    make_stream(url, "ATW1", ["atw1.*"], allow_atomic=True)
    rows = [(f"atw1.{i % 3}", b"r%d" % i) for i in range(230)]
    df = spark.createDataFrame(rows, "subject string, data binary").repartition(2)
    _writer(df, url, atomic="true", atomicBatchSize=40).save()
    msgs = _stream_msgs(url, "ATW1")
    assert sorted(d for d, *_ in msgs) == sorted(d for _, d in rows)
    sizes = _whole_batches(msgs)
    assert sum(sizes.values()) == 230 and max(sizes.values()) == 40


@pytest.mark.feature("atomic_batch")
def test_streaming_atomic_write(spark, js_server, tmp_path):
    url = js_server.url
    make_stream(url, "ATS_IN", ["ats.in"])
    make_stream(url, "ATS_OUT", ["ats.out"], allow_atomic=True)
    asyncio.run(_publish_plain(url, [("ats.in", b"s%d" % i) for i in range(90)]))
    q = (spark.readStream.format("jetstream").option("servers", url).option("stream", "ATS_IN")
         .option("partitions", 2).load().select("data")
         .writeStream.format("jetstream").option("servers", url).option("subject", "ats.out")
         .option("atomic", "true").option("atomicBatchSize", 25)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    msgs = _stream_msgs(url, "ATS_OUT")
    assert sorted(d for d, *_ in msgs) == sorted(b"s%d" % i for i in range(90))
    sizes = _whole_batches(msgs)
    assert sum(sizes.values()) == 90 and max(sizes.values()) <= 25


async def _publish_plain(url, items):
    c = await tclnats_py.connect(url)
    js = c.jetstream()
    for subject, data in items:
        await js.publish(subject, data)
    await c.close()


@pytest.mark.feature("atomic_batch")
def test_a_task_killed_mid_partition_leaves_whole_batches_and_its_retry_an_exact_count(spark, js_server, tmp_path):
    """One partition of 600 rows in batches of 50; its first try dies at row
    420, once the sink has committed some batches: every count of the stream
    seen meanwhile is a whole number of batches.  The retry writes the
    partition again: a batch with rows committed already is refused as a
    duplicate and split until those rows are refused alone, and every other
    row is committed inside an atomic batch.  (Spark ends the failing try's
    input early, so its sink commits the rows it got: a shorter last batch.)"""
    from pyspark.sql import functions as F
    url = js_server.url
    make_stream(url, "ATW2", ["atw2.*"], allow_atomic=True)
    n, size = 600, 50
    seen_file = str(tmp_path / "seen")

    def die_once(i):
        # runs in Spark's Python worker: it names no function of this test module
        import asyncio as aio
        import time as t

        from pyspark import TaskContext

        import tclnats_py as tn

        async def stored():
            c = await tn.connect(url)
            try:
                return (await c.jetstream().stream_info("ATW2")).state.messages
            finally:
                await c.close()
        if i == 420 and TaskContext.get().attemptNumber() == 0:
            seen = [aio.run(stored())]
            deadline = t.time() + 60
            while t.time() < deadline and seen[-1] < 2 * size:
                t.sleep(0.02)
                seen.append(aio.run(stored()))
            with open(seen_file, "w") as f:
                f.write(" ".join(map(str, seen)))
            raise RuntimeError("the task dies here")
        return f"atw2.{i % 4}"

    df = spark.range(0, n, numPartitions=1).select(F.udf(die_once, "string")("id").alias("subject"),
                                                    F.col("id").cast("string").cast("binary").alias("data"))
    _writer(df, url, atomic="true", atomicBatchSize=size).save()
    with open(seen_file) as f:
        seen = [int(x) for x in f.read().split()]
    # the first try wrote part of its partition, and only whole batches of it
    assert seen[-1] >= 2 * size and all(c % size == 0 for c in seen), seen
    msgs = _stream_msgs(url, "ATW2")
    assert len(msgs) == n and sorted(d for d, *_ in msgs) == sorted(str(i).encode() for i in range(n))
    sizes = _whole_batches(msgs)
    assert sum(sizes.values()) == n and max(sizes.values()) == size


@pytest.mark.feature("atomic_batch")
def test_atomic_options_checked_at_save(spark, js_server):
    url = js_server.url
    make_stream(url, "ATW3", ["atw3.*"])  # no allow_atomic
    df = spark.createDataFrame([("atw3.a", b"1")], "subject string, data binary")
    for opts, words in (({"atomic": "maybe"}, "atomic must be true or false"),
                        ({"atomic": "true", "atomicBatchSize": "0"}, "atomicBatchSize must be >= 1"),
                        ({"atomicBatchSize": "10"}, "give atomic=true"),
                        ({"atomic": "true", "subject": "atw3.a"}, "stream ATW3")):
        with pytest.raises(Exception) as e:
            _writer(df, url, **opts).save()
        assert words in str(e.value), str(e.value)[:2000]
    assert stream_count(url, "ATW3") == 0
    # atomic=false is the plain write
    _writer(df, url, atomic="false").save()
    assert stream_count(url, "ATW3") == 1


@pytest.mark.feature("atomic_batch", "api_level")
def test_atomic_write_to_a_server_too_old(spark, old_js_server):
    url = old_js_server.url
    make_stream(url, "ATW4", ["atw4.*"])
    df = spark.createDataFrame([("atw4.a", b"1")], "subject string, data binary")
    with pytest.raises(Exception) as e:
        _writer(df, url, atomic="true").save()
    assert "ErrServerTooOld" in str(e.value) or "needs nats-server 2.12" in str(e.value), str(e.value)[:2000]
    assert stream_count(url, "ATW4") == 0
