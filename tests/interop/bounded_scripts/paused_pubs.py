"""Child of tests/interop/test_bounded.py: 10 publishers and one subscriber with small
pending limits on one server that the test pauses (SIGSTOP).

    python3 paused_pubs.py URL WRITE_BUF_BYTES PENDING_MSGS

stdout: ``pid N`` once connected; ``result key=value ...`` after ``stop``.
stdin: ``go`` (start publishing), ``cont`` (the server is about to be resumed:
errors from now on count as after the pause; answered with ``cont``),
``stop``, ``quit``.
"""

import asyncio
import collections
import os
import sys

import tclnats_py
from tclnats_py import NatsError

URL, WBUF, PENDING = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
PAYLOAD = b"p" * 1024
PUBLISHERS = 10


async def main():
    loop = asyncio.get_running_loop()
    phase = ["before"]
    sub_errors = collections.Counter()

    def sub_error(e):
        sub_errors[f"{getattr(e, 'code', type(e).__name__)}@{phase[0]}"] += 1

    pub_errors = collections.Counter()
    pubs = [await tclnats_py.connect(URL, write_buf_size=WBUF, flush_timeout=60, name=f"pub{i}",
                                     error_cb=lambda e: pub_errors.update([getattr(e, "code", "?")]))
            for i in range(PUBLISHERS)]
    snc = await tclnats_py.connect(URL, error_cb=sub_error, name="sub")
    received = 0

    async def slow(msg):
        nonlocal received
        received += 1
        await asyncio.sleep(0.001)
    sub = await snc.subscribe("bound.flood", cb=slow, pending_msgs_limit=PENDING,
                              pending_bytes_limit=PENDING * 2048)
    await snc.flush()
    print("pid", os.getpid(), flush=True)
    assert (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go"
    stop = asyncio.Event()
    published = [0] * PUBLISHERS
    refused = collections.Counter()

    async def publisher(i, nc):
        while not stop.is_set():
            try:
                await nc.publish("bound.flood", PAYLOAD)
            except NatsError as e:
                refused[e.code] += 1
                await asyncio.sleep(0.01)
                continue
            published[i] += 1
    tasks = [asyncio.ensure_future(publisher(i, nc)) for i, nc in enumerate(pubs)]
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if line == "cont":
            phase[0] = "after"
            print("cont", flush=True)
        elif line == "stop":
            break
        else:
            raise AssertionError(f"unexpected command {line!r}")
    stop.set()
    await asyncio.gather(*tasks)
    for nc in pubs:
        await nc.flush(30)
    codes = ",".join(f"{k}:{v}" for k, v in sorted(refused.items())) or "-"
    perr = ",".join(f"{k}:{v}" for k, v in sorted(pub_errors.items())) or "-"
    serr = ",".join(f"{k}:{v}" for k, v in sorted(sub_errors.items())) or "-"
    print(f"result published={sum(published)} min_per_publisher={min(published)} refused={sum(refused.values())} "
          f"codes={codes} pub_errors={perr} received={received} dropped={sub.dropped} sub_errors={serr}",
          flush=True)
    assert (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "quit"
    for nc in pubs:
        await nc.close()
    await snc.close()


asyncio.run(main())
