"""A JetStream consumer acking while its server dies (kill -9) again and again.

A file-backed nats-server holds MESSAGES messages in a stream; a durable pull
consumer with explicit acks works through them with the Python face: fetch,
then ``ack_sync`` (the ack waits for the server's confirmation).  Every
MESSAGES / CYCLES processed messages the server is killed with SIGKILL and
started again on the same port and store while the consumer keeps going.

What must hold at the end:
- every message was processed at least once (lost = 0);
- no message whose ack the server had confirmed before the last SETTLE
  seconds before a kill came back.  A single nats-server writes a file
  consumer's ack state to disk a little after it confirms an ack (measured
  here: acks confirmed 50 ms before a SIGKILL were rolled back, 200 ms before
  were kept), so before each kill the consumer pauses SETTLE seconds, then
  fetches a batch and the server dies while its acks are on the way.  Those
  messages, and any whose ack was confirmed in that last moment, may come
  again: they are counted as allowed redeliveries.

Sizes: TCLNATS_FAULT_CYCLES and TCLNATS_FAULT_MESSAGES (the long form:
``python -m tclnats_py.compat.faults``).
"""

from __future__ import annotations

import asyncio
import collections
import os

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.testing.server import NatsServer, free_port

pytestmark = pytest.mark.fault

CYCLES = int(os.environ.get("TCLNATS_FAULT_CYCLES", "3"))
MESSAGES = int(os.environ.get("TCLNATS_FAULT_MESSAGES", "600"))
SETTLE = 1.0  # seconds: longer than the server's consumer-state write delay


def test_consumer_acking_while_the_server_dies(tmp_path):
    srv = NatsServer(jetstream=True, store_dir=str(tmp_path / "js"), port=free_port())
    srv.start()

    async def go():
        loop = asyncio.get_running_loop()
        c = await tclnats_py.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                                     connect_timeout=1)
        js = c.jetstream(timeout=2.0)
        await js.create_stream("ACKC", subjects=["ackc.*"], storage="file")
        for i in range(MESSAGES):
            await js.publish_async("ackc.x", f"m{i}".encode())
        await js.publish_async_complete()
        await js.create_consumer("ACKC", durable_name="WORKER", ack_policy="explicit", ack_wait=2.0,
                                 max_ack_pending=1000)
        cons = await js.consumer("ACKC", "WORKER")

        deliveries = collections.Counter()
        confirmed: dict[int, float] = {}  # message -> when its ack was confirmed
        settled: set[int] = set()      # confirmed, then SETTLE seconds passed before a kill
        in_window = []                 # confirmed in the last moment before a kill, then redelivered
        unconfirmed_acks = 0           # acks the crash ate: those messages may come again
        redelivered_confirmed = []     # must stay empty
        per_cycle = max(1, MESSAGES // CYCLES)
        kills = 0
        next_kill = per_cycle

        async def restart():
            if not srv.is_running:
                await loop.run_in_executor(None, srv.start)

        while len(confirmed) < MESSAGES:
            try:
                batch = await cons.fetch(100, expires=0.5)
            except NatsError:
                await restart()
                await asyncio.sleep(0.05)
                continue
            for m in batch:
                i = int(m.data[1:])
                if i in confirmed:
                    (redelivered_confirmed if i in settled else in_window).append(i)
                deliveries[i] += 1
                if kills < CYCLES and sum(deliveries.values()) >= next_kill:
                    # let the server write what it confirmed, then it dies
                    # while this message's ack is on its way
                    next_kill += per_cycle
                    kills += 1
                    await asyncio.sleep(SETTLE)
                    settled.update(confirmed)
                    loop.call_later(0.002, srv.kill)
                try:
                    await m.ack_sync(timeout=1.0)
                    confirmed[i] = loop.time()
                except NatsError:
                    unconfirmed_acks += 1
                    await restart()
                    break  # the rest of this batch comes again after ack_wait
        await c.close()
        return deliveries, confirmed, unconfirmed_acks, redelivered_confirmed, in_window, kills

    try:
        deliveries, confirmed, unconfirmed, bad, window, kills = asyncio.run(asyncio.wait_for(go(), 600))
    finally:
        srv.cleanup()
    lost = MESSAGES - len(deliveries)
    allowed = sum(n - 1 for n in deliveries.values()) - len(bad) - len(window)
    print(f"\nack crash cycles={kills} processed={len(deliveries)} confirmed acks={len(confirmed)} "
          f"unconfirmed acks={unconfirmed} redeliveries of unconfirmed={allowed} "
          f"confirmed just before a kill and redelivered={len(window)} "
          f"redeliveries of older confirmed acks={len(bad)} lost={lost}")
    assert kills == CYCLES
    assert lost == 0 and len(confirmed) == MESSAGES
    assert bad == []
