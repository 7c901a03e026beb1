"""The source's readMode (consumer, direct, auto): a range read by batch
direct gets (ADR-31) gives exactly the rows the consumer read gives; direct
asked of a stream without allow_direct or of a 2.10 server is refused at
load(), auto falls back to the consumer there."""

import asyncio
import json

import pytest

from tests.spark_fixtures import make_stream, session  # noqa: E402  (skips without pyspark/java)

import tclnats_py  # noqa: E402
from tclnats_py.engine.options import Options  # noqa: E402
from tclnats_py.sync.driver import Driver  # noqa: E402

pytestmark = pytest.mark.spark

DELETED = (5, 6, 7, 100, 1500, 2999)


@pytest.fixture(scope="module")
def spark():
    yield from session("local[2]", "tclnats-direct")


def fill(url, stream, n=3000, deleted=DELETED, **kw):
    """``stream`` with n messages on two subjects (every fifth with headers), ``deleted`` removed."""
    make_stream(url, stream, [f"{stream.lower()}.*"], **kw)

    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        for i in range(n):
            subject = f"{stream.lower()}.{'odd' if i % 2 else 'even'}"
            await js.publish_async(subject, bytes([i % 256]) * (i % 7), {"N": [str(i), "x"]} if i % 5 == 0 else None)
        await js.publish_async_complete(30)
        for seq in deleted:
            await js.delete_msg(stream, seq)
        await c.close()
    asyncio.run(go())


def read(spark, url, stream, mode=None, **opts):
    r = spark.read.format("jetstream").option("servers", url).option("stream", stream).option("partitions", 3)
    if mode is not None:
        r = r.option("readMode", mode)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def rows(df):
    return sorted((tuple(r) for r in df.collect()), key=lambda r: r[4])


class DirectGets:
    """Counts the batch direct get requests sent to a stream meanwhile."""

    def __init__(self, url, stream):
        self.d = Driver(Options(servers=(url,)))
        self.d.connect()
        self.sub = self.d.subscribe(f"$JS.API.DIRECT.GET.{stream}")
        self.d.flush()

    def count(self):
        n = 0
        try:
            while True:
                m = self.sub.next_msg(timeout=0.5)
                assert "batch" in json.loads(m.data)
                n += 1
        except tclnats_py.NatsError as e:
            assert e.code == "ErrTimeout"
        self.d.close()
        return n


@pytest.mark.feature("direct_batch")
def test_direct_reads_the_rows_the_consumer_reads(spark, js_server):
    url = js_server.url
    fill(url, "SDR1", allow_direct=True)
    gets = DirectGets(url, "SDR1")
    direct = rows(read(spark, url, "SDR1", "direct"))
    assert gets.count() >= 3  # one per partition at least
    consumer = rows(read(spark, url, "SDR1", "consumer"))
    assert direct == consumer == rows(read(spark, url, "SDR1"))
    assert [r[4] for r in direct] == [s for s in range(1, 3001) if s not in DELETED]
    subj, data, headers, stream, seq, ts = direct[0]
    assert (subj, bytes(data), dict(headers), stream, seq) == ("sdr1.even", b"", {"N": ["0", "x"]}, "SDR1", 1)
    assert ts.year >= 2024
    # auto reads a one-replica stream with allow_direct by direct gets
    gets = DirectGets(url, "SDR1")
    assert rows(read(spark, url, "SDR1", "auto", decode="true").drop("value")) == consumer
    assert gets.count() >= 3


@pytest.mark.feature("direct_batch")
def test_direct_with_a_subject_filter_a_sequence_range_and_an_empty_range(spark, js_server):
    url = js_server.url
    fill(url, "SDR2", allow_direct=True)
    for opts in ({"subject": "sdr2.odd"}, {"subject": "sdr2.even", "startSeq": 90, "endSeq": 1600},
                 {"startSeq": 2990, "endSeq": 2999}, {"startSeq": 5, "endSeq": 7}, {"startSeq": 3001}):
        direct = rows(read(spark, url, "SDR2", "direct", **opts))
        assert direct == rows(read(spark, url, "SDR2", "consumer", **opts)), opts
        if "subject" in opts:
            assert direct and {r[0] for r in direct} == {opts["subject"]}
    assert rows(read(spark, url, "SDR2", "direct", startSeq=5, endSeq=7)) == []


@pytest.mark.feature("direct_batch")
def test_a_stream_without_allow_direct(spark, js_server):
    url = js_server.url
    fill(url, "SDR3", n=200, deleted=(3,))
    gets = DirectGets(url, "SDR3")
    assert rows(read(spark, url, "SDR3", "auto")) == rows(read(spark, url, "SDR3", "consumer"))
    assert len(rows(read(spark, url, "SDR3", "auto"))) == 199
    assert gets.count() == 0
    with pytest.raises(Exception) as e:
        read(spark, url, "SDR3", "direct").collect()
    text = str(e.value)
    assert "readMode=direct" in text and "allow_direct is false" in text and "readMode=consumer" in text, text[:2000]


@pytest.mark.feature("direct_batch")
def test_direct_in_a_streaming_read(spark, js_server, tmp_path):
    url = js_server.url
    fill(url, "SDR4", n=500, deleted=(5, 6, 7, 100, 201), allow_direct=True)
    gets = DirectGets(url, "SDR4")
    df = (spark.readStream.format("jetstream").option("servers", url).option("stream", "SDR4")
          .option("readMode", "direct").option("maxOffsetsPerTrigger", 200).load())
    q = (df.writeStream.format("memory").queryName("sdr4").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    got = sorted((tuple(r) for r in spark.sql("select * from sdr4").collect()), key=lambda r: r[4])
    assert gets.count() >= 3
    assert got == rows(read(spark, url, "SDR4", "consumer"))


@pytest.mark.feature("direct_batch")
def test_read_mode_is_checked_at_load(spark, js_server):
    make_stream(js_server.url, "SDR5", ["sdr5.*"])
    with pytest.raises(Exception) as e:
        read(spark, js_server.url, "SDR5", "fast")
    assert "readMode must be one of consumer, direct, auto, not 'fast'" in str(e.value), str(e.value)[:2000]


@pytest.mark.feature("direct_batch", "api_level")
def test_a_server_too_old_for_batch_gets(spark, old_js_server):
    url = old_js_server.url
    fill(url, "SDR6", n=100, deleted=(7,), allow_direct=True)
    assert rows(read(spark, url, "SDR6", "auto")) == rows(read(spark, url, "SDR6", "consumer"))
    assert len(rows(read(spark, url, "SDR6"))) == 99
    with pytest.raises(Exception) as e:
        read(spark, url, "SDR6", "direct").collect()
    text = str(e.value)
    assert "ErrServerTooOld" in text or "needs nats-server 2.11" in text, text[:2000]
    assert "readMode=direct" in text, text[:2000]


@pytest.mark.feature("direct_batch")
def test_auto_reads_a_replicated_stream_through_a_consumer(spark):
    from tclnats_py.testing.server import NatsCluster
    with NatsCluster(3, jetstream=True) as cluster:
        url = ",".join(cluster.urls)
        fill(cluster.urls[0], "SDR7", n=300, deleted=(4, 200), allow_direct=True, num_replicas=3)
        gets = DirectGets(cluster.urls[0], "SDR7")
        auto = rows(read(spark, url, "SDR7", "auto"))
        assert gets.count() == 0  # a follower answering a direct get may lag behind the leader
        assert len(auto) == 298
        assert rows(read(spark, url, "SDR7", "direct")) == auto
