"""The Spark source's blocking partition reader against a real server, without Spark."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.engine.js.meta import parse_metadata, seq_time_pending
from tclnats_py.spark.reader import eligible as eligible
from tclnats_py.spark.reader import read_columns as read_columns


def fill(url, stream, n):
    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        await js.create_stream(stream, subjects=[f"{stream.lower()}.*"], storage="memory")
        for i in range(n):
            subj = f"{stream.lower()}.{'odd' if i % 2 else 'even'}"
            await js.publish_async(subj, bytes([i % 256]) * (i % 7), {"N": [str(i)]} if i % 5 == 0 else None)
        await js.publish_async_complete()
        await c.close()
    asyncio.run(go())


def _hdr_list(cols):
    out = [None] * len(cols["seq"])
    for i, h in cols["headers"]:
        out[i] = h
    return out


def rows(url, stream, first, last, filt=None, batch=50):
    out = []
    for cols in read_columns({"servers": url}, "$JS.API", stream, first, last, filt, batch=batch):
        out.extend(zip(cols["subject"], cols["data"], _hdr_list(cols), cols["seq"], cols["ts_ns"]))
    return out


def test_range_is_read_exactly_with_headers_and_binary(js_server):
    fill(js_server.url, "SR1", 500)
    got = rows(js_server.url, "SR1", 101, 390)
    assert [r[3] for r in got] == list(range(101, 391))
    for subj, data, hdrs, seq, ts in got:
        i = seq - 1
        assert data == bytes([i % 256]) * (i % 7)
        assert subj.decode() == f"sr1.{'odd' if i % 2 else 'even'}"
        assert hdrs == ({"N": [str(i)]} if i % 5 == 0 else None)
        assert int(ts) > 1_600_000_000_000_000_000


def test_filter_and_the_stream_end_stop_the_read(js_server):
    fill(js_server.url, "SR2", 300)
    # odd messages are at even sequences; the range ends past the stream's end
    got = rows(js_server.url, "SR2", 1, 10_000, filt="sr2.odd")
    assert [r[3] for r in got] == list(range(2, 301, 2))
    assert rows(js_server.url, "SR2", 50, 40) == []


def test_nothing_matching_returns_at_once(js_server):
    fill(js_server.url, "SR3", 20)
    assert rows(js_server.url, "SR3", 1, 20, filt="sr3.none") == []


def test_eligible_only_for_plain_nats_urls():
    assert eligible({"servers": "nats://a:4222,nats://b:4222"})
    assert eligible({"servers": "localhost:4222"})
    assert not eligible({"servers": "tls://a:4222"})
    assert not eligible({"servers": "nats://a:4222", "creds": "/x.creds"})


def test_range_whose_end_was_deleted_ends_at_what_is_left(js_server):
    fill(js_server.url, "SR4", 100)

    async def drop():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        for seq in range(60, 101):
            await js.delete_msg("SR4", seq)
        await c.close()
    asyncio.run(drop())
    # planned as 1..100 before the deletes: the read stops at 59, without waiting
    got = rows(js_server.url, "SR4", 1, 100, batch=7)
    assert [r[3] for r in got] == list(range(1, 60))


def test_both_read_paths_give_the_same_arrow_batches(js_server):
    # the asyncio path stays for TLS and credentials: same rows, same schema
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark")
    import pyarrow as pa
    from tclnats_py.spark.datasource import _arrow_batches as _arrow_batches
    from tclnats_py.spark.datasource import _fast_arrow_batches as _fast_arrow_batches
    fill(js_server.url, "SR5", 400)
    opts = {"servers": js_server.url}
    for first, last, filt, decode in [(1, 400, None, False), (37, 311, "sr5.odd", True)]:
        fast = pa.Table.from_batches(list(_fast_arrow_batches(opts, "SR5", first, last, filt, decode)))
        slow = pa.Table.from_batches(list(_arrow_batches(opts, "SR5", first, last, filt, decode)))
        assert fast.schema == slow.schema
        assert fast.num_rows == (last - first + 1 if filt is None else len(range(first + first % 2, last + 1, 2)))
        assert fast.equals(slow)
        assert fast.column("timestamp")[0].value % 1000 or fast.column("timestamp")[1].value % 1000  # microseconds


# ------------------------------------------------------------------ server-free


def test_seq_time_pending_agrees_with_the_metadata():
    for reply in ("$JS.ACK.S.C.2.15.7.1700000000123456789.3",
                  "$JS.ACK.hub.ACCHASH.S.C.2.15.7.1700000000123456789.3.rnd"):
        m = parse_metadata(reply, "s.a")
        seq, ts, pending = seq_time_pending(reply, "s.a")
        assert (int(seq), int(ts) // 1_000_000, int(pending)) == (m["stream_seq"], m["timestamp"], m["num_pending"])
    with pytest.raises(tclnats_py.NatsError) as e:
        seq_time_pending("_INBOX.abc", "s.a")
    assert e.value.code == "ErrNotJSMessage"


def test_unknown_stream_is_the_shared_js_error(js_server):
    with pytest.raises(tclnats_py.ErrStreamNotFound) as e:
        rows(js_server.url, "NO_SUCH_STREAM", 1, 10)
    assert e.value.details["err_code"] == 10059


def test_reader_and_spark_source_name_no_jetstream_wire_subject():
    import pathlib
    pkg = pathlib.Path(tclnats_py.__file__).parent
    for name in ("spark/reader.py", "spark/datasource.py"):
        text = (pkg / name).read_text()
        assert "$JS." not in text and "CONSUMER." not in text, name
