"""Interop with nats-py (an independent client) on one server, both
directions: pub/sub, request/reply, headers, binary payloads byte-exact,
queue groups shared between the two clients."""

import asyncio

import nats
import pytest

import tclnats_py

PAYLOADS = [b"", b"\r\n", bytes(range(256)), b"\x00\xff" * 5000, bytes(range(256)) * 4000]


async def their_flush(theirs):
    """nats-py's flush() writes its PING at once while a SUB still waits in its
    pending buffer, so the PONG can come back before the server has seen the
    SUB (a publisher that is quick enough then loses messages).  The second
    round trip starts after the first one ended, when the SUB has left."""
    await theirs.flush()
    await theirs.flush()


@pytest.fixture
def pair(nats_server):
    """(ours, theirs) connected to the same server, closed afterwards."""
    loop = asyncio.new_event_loop()

    async def connect():
        return (await tclnats_py.connect(nats_server.url, name="tclnats"),
                await nats.connect(nats_server.url, name="nats-py"))
    ours, theirs = loop.run_until_complete(connect())
    yield loop, ours, theirs

    async def close():
        await theirs.close()
        await ours.close()
    loop.run_until_complete(close())
    loop.close()


def test_natspy_publishes_we_receive_byte_exact(pair):
    loop, ours, theirs = pair

    async def go():
        sub = await ours.subscribe("ix.to_us")
        await ours.flush()  # the SUB has reached the server before their PUB
        for p in PAYLOADS:
            await theirs.publish("ix.to_us", p)
        await theirs.publish("ix.to_us", b"with reply", reply="their.inbox")
        await their_flush(theirs)
        for p in PAYLOADS:
            m = await sub.next_msg(5)
            assert m.data == p and m.subject == "ix.to_us" and m.reply is None and m.headers is None
        m = await sub.next_msg(5)
        assert (m.data, m.reply) == (b"with reply", "their.inbox")
    loop.run_until_complete(asyncio.wait_for(go(), 30))


def test_we_publish_natspy_receives_byte_exact(pair):
    loop, ours, theirs = pair

    async def go():
        got = []
        done = asyncio.Event()

        async def cb(msg):
            got.append(msg)
            if len(got) == len(PAYLOADS) + 1:
                done.set()
        await theirs.subscribe("ix.to_them", cb=cb)
        await their_flush(theirs)
        for p in PAYLOADS:
            ours.publish("ix.to_them", p)
        ours.publish("ix.to_them", "text é", reply="our.inbox")
        await asyncio.wait_for(done.wait(), 5)
        assert [m.data for m in got[:-1]] == PAYLOADS
        assert (got[-1].data, got[-1].reply) == ("text é".encode(), "our.inbox")
    loop.run_until_complete(asyncio.wait_for(go(), 30))


def test_headers_both_ways(pair):
    loop, ours, theirs = pair

    async def go():
        # nats-py -> us: every key it sends, case kept, one value each (its dict model)
        sub = await ours.subscribe("ix.hdr.in")
        await ours.flush()
        await theirs.publish("ix.hdr.in", b"h", headers={"Trace-Id": "abc", "trace-id": "lower", "Unicode": "ű"})
        await their_flush(theirs)
        m = await sub.next_msg(5)
        assert m.headers == {"Trace-Id": ["abc"], "trace-id": ["lower"], "Unicode": ["ű"]}
        assert m.data == b"h"

        # us -> nats-py: multi-valued keys arrive; nats-py keeps one value per key (the last)
        fut = asyncio.get_running_loop().create_future()

        async def cb(msg):
            fut.set_result(msg)
        await theirs.subscribe("ix.hdr.out", cb=cb)
        await their_flush(theirs)
        ours.publish("ix.hdr.out", bytes(range(256)), headers={"Multi": ["v1", "v2", "v3"], "Single": "s"})
        msg = await asyncio.wait_for(fut, 5)
        assert msg.headers == {"Multi": "v3", "Single": "s"} and msg.data == bytes(range(256))

        # a round trip us -> nats-py -> us: nats-py relays the headers it saw
        # (one value per key) under new names; payload and values come back intact
        relay = await ours.subscribe("ix.hdr.back")
        await ours.flush()

        async def relay_cb(msg):
            await theirs.publish("ix.hdr.back", msg.data, headers={f"Got-{k}": v for k, v in msg.headers.items()})
        await theirs.subscribe("ix.hdr.relay", cb=relay_cb)
        await their_flush(theirs)
        ours.publish("ix.hdr.relay", b"\x00relay", headers={"A": ["1", "2"], "B": "b"})
        m = await relay.next_msg(5)
        assert m.data == b"\x00relay" and m.headers == {"Got-A": ["2"], "Got-B": ["b"]}
    loop.run_until_complete(asyncio.wait_for(go(), 30))


def test_requests_both_ways(pair):
    loop, ours, theirs = pair

    async def go():
        # we ask, nats-py answers (with headers)
        async def their_service(msg):
            await msg.respond(b"nats-py:" + msg.data)
        await theirs.subscribe("ix.svc.theirs", cb=their_service)

        async def their_hdr_service(msg):
            await theirs.publish(msg.reply, msg.data[::-1], headers={"Echo": msg.headers.get("Q", "")})
        await theirs.subscribe("ix.svc.theirs_hdr", cb=their_hdr_service)
        await their_flush(theirs)
        for p in PAYLOADS[:4]:
            assert (await ours.request("ix.svc.theirs", p, timeout=5)).data == b"nats-py:" + p
        r = await ours.request("ix.svc.theirs_hdr", b"abc", timeout=5, headers={"Q": ["x"]})
        assert r.data == b"cba" and r.headers == {"Echo": ["x"]}
        many = await asyncio.gather(*(ours.request("ix.svc.theirs", b"%d" % i, timeout=5) for i in range(100)))
        assert [m.data for m in many] == [b"nats-py:%d" % i for i in range(100)]
        got = await ours.request_many("ix.svc.theirs", b"old-style", max_msgs=1, timeout=5)
        assert [m.data for m in got] == [b"nats-py:old-style"]

        # nats-py asks, we answer
        async def our_service(msg):
            await msg.respond(b"tclnats:" + msg.data, headers={"Seen": msg.headers["K"]} if msg.headers else None)
        await ours.subscribe("ix.svc.ours", cb=our_service)
        await ours.flush()
        for p in PAYLOADS[:4]:
            assert (await theirs.request("ix.svc.ours", p, timeout=5)).data == b"tclnats:" + p
        r = await theirs.request("ix.svc.ours", b"h", timeout=5, headers={"K": "v"})
        assert r.data == b"tclnats:h" and r.headers == {"Seen": "v"}

        # no responders, seen the same way by both
        with pytest.raises(tclnats_py.ErrNoResponders):
            await ours.request("ix.svc.nobody", b"", timeout=2)
        with pytest.raises(nats.errors.NoRespondersError):
            await theirs.request("ix.svc.nobody", b"", timeout=2)
    loop.run_until_complete(asyncio.wait_for(go(), 30))


def test_queue_group_shared_by_both_clients(pair):
    loop, ours, theirs = pair

    async def go():
        counts = {"ours": 0, "theirs": 0}

        def ours_cb(msg):
            counts["ours"] += 1

        async def theirs_cb(msg):
            counts["theirs"] += 1
        await ours.subscribe("ix.q", queue="mixed", cb=ours_cb)
        await theirs.subscribe("ix.q", queue="mixed", cb=theirs_cb)
        await ours.flush()
        await their_flush(theirs)
        for i in range(400):
            ours.publish("ix.q", b"%d" % i)
        await ours.flush()
        for _ in range(300):
            if sum(counts.values()) == 400:
                break
            await asyncio.sleep(0.01)
        assert sum(counts.values()) == 400 and counts["ours"] > 0 and counts["theirs"] > 0
    loop.run_until_complete(asyncio.wait_for(go(), 30))
