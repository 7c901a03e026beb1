"""Spark's source and sink over a WebSocket (ws://): the tasks' blocking
driver reads the frames' NATS bytes (raw mode unwraps them), and the rows
are the ones a TCP read gives."""

import pytest

from tests.spark_fixtures import session  # noqa: E402  (skips without pyspark/java)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    yield from session("local[2]", "tclnats-ws-tests")


@pytest.mark.feature("websocket")
def test_write_and_read_over_websocket(spark, ws_server):
    import tclnats_py.sync
    with tclnats_py.sync.connect(ws_server.url) as nc:
        nc.jetstream().create_stream("SPWS", subjects=["spws.*"], storage="memory")
    rows = [(f"spws.{i % 2}", b"x" * (i % 7 + 1)) for i in range(400)]
    (spark.createDataFrame(rows, "subject string, data binary").write.format("jetstream")
     .option("servers", ws_server.ws_url).mode("append").save())
    for url in (ws_server.ws_url, ws_server.url):
        df = (spark.read.format("jetstream").option("servers", url).option("stream", "SPWS")
              .option("partitions", 2).load())
        got = sorted((r.seq, r.subject, bytes(r.data)) for r in df.collect())
        assert len(got) == 400 and [g[0] for g in got] == list(range(1, 401))
        assert sorted((s, d) for _, s, d in got) == sorted(rows)
