"""The Spark source's blocking partition reader against a real server, without Spark."""

import time
import asyncio
import logging

import pytest

import tclnats_py
from tclnats_py.engine.js.meta import parse_metadata, seq_time_pending
from tclnats_py.spark.options import parse_conn
from tclnats_py.spark.reader import Meta, read_columns


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


def rows(url, stream, first, last, filt=None, batch=50, **kw):
    out = []
    for cols in read_columns(parse_conn({"servers": url}), stream, first, last, filt, batch=batch, **kw):
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
    # a pull that finds nothing expires after 5 s on the server: a filter that
    # matches nothing must end the read without waiting for that
    fill(js_server.url, "SR3", 20)
    t0 = time.monotonic()
    assert rows(js_server.url, "SR3", 1, 20, filt="sr3.none") == []
    assert time.monotonic() - t0 < 4.0


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


def _consumers(url, stream):
    async def go():
        c = await tclnats_py.connect(url)
        try:
            return await c.jetstream().consumer_names(stream)
        finally:
            await c.close()
    return asyncio.run(go())


def test_a_restarted_server_is_read_on_from_the_last_sequence(fresh_server, caplog):
    url = fresh_server.url

    async def fill_file():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        await js.create_stream("SRR", subjects=["srr.*"], storage="file")
        for i in range(20_000):
            await js.publish_async("srr.a", b"r" * 200)
        await js.publish_async_complete(60)
        await c.close()
    asyncio.run(fill_file())
    it = read_columns(parse_conn({"servers": url}), "SRR", 1, 20_000, retries=20, retry_interval_ms=100)
    seqs = list(next(it)["seq"])
    assert 0 < len(seqs) < 20_000
    fresh_server.restart()
    with caplog.at_level(logging.WARNING, logger="tclnats_py.spark"):
        for cols in it:
            seqs.extend(cols["seq"])
    assert seqs == list(range(1, 20_001))  # every sequence once, in order
    assert "retry 1 of 20" in caplog.text and "stream SRR at sequence" in caplog.text
    # past the budget: an error naming the server, the stream and the sequence
    it = read_columns(parse_conn({"servers": url}), "SRR", 1, 20_000, retries=1, retry_interval_ms=50)
    next(it)
    fresh_server.stop()
    with pytest.raises(tclnats_py.NatsError) as e:
        for _ in it:
            pass
    text = str(e.value)
    assert "stream SRR at sequence" in text and url in text and "fetchOffset.numRetries=1" in text


def test_messages_removed_under_a_running_range(js_server, caplog):
    fill(js_server.url, "SR6", 1000)

    async def purge():
        c = await tclnats_py.connect(js_server.url)
        await c.jetstream().purge_stream("SR6", keep=500)
        await c.close()
    asyncio.run(purge())  # planned as 1..1000 before the purge
    with pytest.raises(tclnats_py.NatsError) as e:
        rows(js_server.url, "SR6", 1, 1000)
    assert e.value.code == "ErrDataLoss" and "sequence 1 " in str(e.value) and "now 501" in str(e.value)
    with caplog.at_level(logging.WARNING, logger="tclnats_py.spark"):
        got = rows(js_server.url, "SR6", 1, 1000, fail_on_data_loss=False)
    assert [r[3] for r in got] == list(range(501, 1001))
    assert "500 message(s) before sequence 501 were removed" in caplog.text


def test_closing_a_read_early_deletes_its_consumer(js_server):
    fill(js_server.url, "SR7", 3000)
    it = read_columns(parse_conn({"servers": js_server.url}), "SR7", 1, 3000, batch=100)
    next(it)
    assert len(_consumers(js_server.url, "SR7")) == 1
    it.close()
    assert _consumers(js_server.url, "SR7") == []


def test_split_follows_the_filtered_messages(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        await js.create_stream("SR8", subjects=["sr8.*"], storage="memory")
        for i in range(2000):
            await js.publish_async("sr8.b" if i % 10 == 0 or i >= 1800 else "sr8.a", b"x")
        await js.publish_async_complete()
        await c.close()
    asyncio.run(go())
    with Meta(parse_conn({"servers": js_server.url})) as m:
        ranges = m.split("SR8", 1, 2000, 4, "sr8.b", stream_last=2000)
        assert m.split("SR8", 1, 2000, 4, "sr8.none", stream_last=2000) == []
        assert m.split("SR8", 1, 2000, 3) == [(1, 667), (668, 1334), (1335, 2000)]
    # 180 matches in 1..1800 and 200 in 1801..2000: four parts of 95 (each boundary within 1/64 of a part)
    counts = [len(rows(js_server.url, "SR8", a, b, "sr8.b")) for a, b in ranges]
    assert all(abs(c - 95) <= 2 for c in counts) and sum(counts) == 380, counts
    assert ranges[0][0] == 1 and ranges[-1][1] == 2000


def test_tls_and_auth_in_the_reader(tls_certs, tmp_path):
    from tclnats_py.testing.auth import userpass_auth
    from tclnats_py.testing.certs import tls_config
    from tclnats_py.testing.server import NatsServer
    up = userpass_auth()
    with NatsServer(config=tls_config(tls_certs) + up.config, jetstream=True, tls=True) as srv:
        async def go():
            c = await tclnats_py.connect(srv.url, tls_ca=tls_certs["ca"], user=up.user, password=up.password)
            js = c.jetstream()
            await js.create_stream("SR9", subjects=["sr9.*"], storage="memory")
            for i in range(50):
                await js.publish_async("sr9.a", b"%d" % i)
            await js.publish_async_complete()
            await c.close()
        asyncio.run(go())
        good = {"servers": srv.url, "tlsca": tls_certs["ca"], "user": up.user, "password": up.password}
        got = [s for cols in read_columns(parse_conn(good), "SR9", 1, 50) for s in cols["seq"]]
        assert got == list(range(1, 51))
        with pytest.raises(tclnats_py.NatsError) as e:
            list(read_columns(parse_conn(dict(good, password="nope")), "SR9", 1, 50))
        assert e.value.code == "ErrAuthorization"
        with pytest.raises(tclnats_py.NatsError) as e:  # no CA: not retried, named
            list(read_columns(parse_conn({"servers": srv.url}), "SR9", 1, 50))
        assert e.value.code == "ErrTLS" and "certificate" in str(e.value).lower()
        s = parse_conn(good)
        assert up.password not in repr(s) and "password=***" in repr(s)
        # pass-through nats.<option> reaches the connection too; tlsVerify=false needs no CA
        passed = {"servers": srv.url, "tlsverify": "false", "nats.user": up.user, "nats.password": up.password}
        assert [s for cols in read_columns(parse_conn(passed), "SR9", 1, 5) for s in cols["seq"]] == [1, 2, 3, 4, 5]
    # a server that requires client certificates
    with NatsServer(config=tls_config(tls_certs, verify=True), jetstream=True, tls=True) as srv:
        async def go2():
            c = await tclnats_py.connect(srv.url, tls_ca=tls_certs["ca"], tls_cert=tls_certs["client_cert"],
                                         tls_key=tls_certs["client_key"])
            js = c.jetstream()
            await js.create_stream("SR10", subjects=["sr10.*"], storage="memory")
            await js.publish("sr10.a", b"1")
            await c.close()
        asyncio.run(go2())
        mtls = {"servers": srv.url, "tlsca": tls_certs["ca"], "tlscert": tls_certs["client_cert"],
                "tlskey": tls_certs["client_key"]}
        assert [s for cols in read_columns(parse_conn(mtls), "SR10", 1, 1) for s in cols["seq"]] == [1]
        with pytest.raises((tclnats_py.NatsError, OSError)):  # no client certificate: refused
            list(read_columns(parse_conn({"servers": srv.url, "tlsca": tls_certs["ca"]}), "SR10", 1, 1, retries=0))


def test_connect_timeout_reaches_the_reader():
    import socket
    import time
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)  # accepts, never says INFO
    try:
        url = f"nats://127.0.0.1:{ls.getsockname()[1]}"
        t = time.monotonic()
        with pytest.raises(tclnats_py.NatsError) as e:
            list(read_columns(parse_conn({"servers": url, "connecttimeoutms": "300"}), "X", 1, 1, retries=0))
        assert e.value.code == "ErrTimeout" and time.monotonic() - t < 3
    finally:
        ls.close()


def test_errors_and_reprs_name_no_secret():
    s = parse_conn({"servers": "nats://alice:s3cret-pw@127.0.0.1:1", "token": "t0ken-x", "password": "pw-9"})
    text = repr(s) + s.servers_text()
    assert "s3cret-pw" not in text and "t0ken-x" not in text and "pw-9" not in text
    assert "nats://***@127.0.0.1:1" in s.servers_text()
    with pytest.raises(tclnats_py.NatsError) as e:
        list(read_columns(s, "X", 1, 1, retries=0))
    assert e.value.code == "ErrNoServers" and "s3cret-pw" not in str(e.value) and "127.0.0.1:1" in str(e.value)


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
