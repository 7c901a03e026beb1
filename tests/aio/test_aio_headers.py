"""Headers on the asyncio face: ``msg.headers["K"]`` is a
string (the first value), ``get_all`` gives every value, lookups fall back
to case-insensitive; the lists stay inside for the engine and the Tcl face."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.engine.headers import Headers, encode_headers, parse_headers


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.unit
def test_headers_read_like_natspy_and_keep_lists_inside():
    h = Headers(parse_headers(b"NATS/1.0\r\nK: v1\r\nK: v2\r\nNats-Msg-Id: x\r\n\r\n"))
    assert h["K"] == "v1" and h.get("K") == "v1" and h.get_all("K") == ["v1", "v2"]
    assert h["nats-msg-id"] == "x" and "NATS-MSG-ID" in h and h.get_all("nats-msg-id") == ["x"]
    assert h.get("missing") is None and h.get("missing", "d") == "d" and h.get_all("missing") == []
    with pytest.raises(KeyError):
        h["missing"]
    assert dict(h.items()) == {"K": "v1", "Nats-Msg-Id": "x"}
    assert h.multi_items() == [("K", ["v1", "v2"]), ("Nats-Msg-Id", ["x"])]
    assert h == {"K": ["v1", "v2"], "Nats-Msg-Id": ["x"]} and dict(h) == {"K": ["v1", "v2"], "Nats-Msg-Id": ["x"]}
    # encoding keeps every value (publishing a received message's headers again)
    assert encode_headers(h) == b"NATS/1.0\r\nK: v1\r\nK: v2\r\nNats-Msg-Id: x\r\n\r\n"
    c = h.copy()
    c.get_all("K").append("no effect")
    assert isinstance(c, Headers) and c.get_all("K") == ["v1", "v2"]
    # the engine's reads see the lists
    m = tclnats_py.Msg("s", b"", None, Headers(parse_headers(b"NATS/1.0 404 No Messages\r\n\r\n")))
    assert m.status == 404 and m.description == "No Messages" and m.header("Status") == "404"


def test_received_headers_and_publishing_str_or_lists(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("hdr.>")
        await nc.publish("hdr.a", b"1", headers={"K": "one", "Multi": ["x", "y"]})
        m = await sub.next_msg(2)
        assert isinstance(m.headers, Headers)
        assert m.headers["K"] == "one" and m.headers["multi"] == "x" and m.headers.get_all("Multi") == ["x", "y"]
        # a received message published again keeps every value
        await nc.publish("hdr.b", m.data, headers=m.headers)
        m2 = await sub.next_msg(2)
        assert m2.headers.get_all("Multi") == ["x", "y"] and m2.headers["K"] == "one"

        async def echo(msg):
            await msg.respond(b"", headers={"Got": msg.headers["Q"]})
        await nc.subscribe("hdr.svc", cb=echo)
        await nc.flush()
        r = await nc.request("hdr.svc", b"", timeout=2, headers={"Q": "?"})
        assert r.headers["Got"] == "?"
        await nc.close()
    run(go())


def test_jetstream_message_headers(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("HDRS", subjects=["hdrs.>"])
        try:
            await js.publish("hdrs.1", b"x", headers={"K": ["a", "b"]}, msg_id="id-1")
            cons = await js.create_consumer("HDRS", durable_name="H")
            msg = (await cons.fetch(1, max_wait=2))[0]
            assert msg.headers["K"] == "a" and msg.headers.get_all("K") == ["a", "b"]
            assert msg.headers["nats-msg-id"] == "id-1"
            stored = await js.get_msg("HDRS", 1)
            assert stored.headers["K"] == "a" and stored.headers.get_all("K") == ["a", "b"]
        finally:
            await js.delete_stream("HDRS")
            await nc.close()
    run(go())
