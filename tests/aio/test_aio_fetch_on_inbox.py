"""JetStream.fetch_on_inbox: the asyncio face's fetch on a long-lived pull
inbox (what natspy's PullSubscription.fetch stands on), against a real
nats-server."""

import asyncio

import pytest

import tclnats_py
from tclnats_py import NatsError


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_fetch_on_inbox_takes_batches_then_times_out(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        try:
            js = c.jetstream()
            await js.create_stream("PY_INBOX_FETCH", subjects=["inboxfetch.*"], storage="memory")
            await js.create_consumer("PY_INBOX_FETCH", durable_name="PULL")
            for i in range(3):
                await js.publish("inboxfetch.a", f"m{i}")
            inbox = c.new_inbox()
            sub = await c.subscribe(inbox)
            nms = js.jsapi.next_subject("PY_INBOX_FETCH", "PULL")
            first = await js.fetch_on_inbox(sub, nms, 2, 5.0)
            assert [bytes(m.data) for m in first] == [b"m0", b"m1"]
            for m in first:
                assert m.reply and m.reply.startswith("$JS.ACK.PY_INBOX_FETCH.PULL.")
            rest = await js.fetch_on_inbox(sub, nms, 5, 1.0)
            assert [bytes(m.data) for m in rest] == [b"m2"]
            with pytest.raises(NatsError) as ei:
                await js.fetch_on_inbox(sub, nms, 1, 0.3)
            assert ei.value.code == "ErrTimeout"
            # the same inbox serves the next fetch: a message published now comes
            await js.publish("inboxfetch.b", "later")
            later = await js.fetch_on_inbox(sub, nms, 1, 5.0, reply_to=inbox)
            assert [bytes(m.data) for m in later] == [b"later"]
        finally:
            await c.close()
    run(go())
