"""Child of tests/interop/test_bounded.py: keeps publishing 1 KiB messages through an outage.

    python3 outage_pub.py URL RECONNECT_BUF_BYTES WRITE_BUF_BYTES

stdout: ``pid N`` once connected; ``result key=value ...`` after ``stop``.
stdin: ``go`` (start publishing), ``stop`` (stop, flush, report), ``quit``.
Each accepted message carries its sequence number (10 digits) first; a
refused one takes no number.  ``outage_from`` is the first number accepted
while the connection was not "connected" (from then on, nothing accepted may
be lost).
"""

import asyncio
import collections
import os
import sys

import tclnats_py
from tclnats_py import NatsError

URL, BUF, WBUF = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
FILL = b"x" * (1024 - 10)


async def main():
    loop = asyncio.get_running_loop()
    errors = collections.Counter()
    statuses = []
    nc = await tclnats_py.connect(URL, reconnect_buf_size=BUF, write_buf_size=WBUF, flush_timeout=10,
                                  max_reconnect_attempts=-1, reconnect_time_wait=0.1, connect_timeout=1,
                                  error_cb=lambda e: errors.update([getattr(e, "code", type(e).__name__)]),
                                  status_cb=statuses.append)
    print("pid", os.getpid(), flush=True)
    assert (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go"
    stop = asyncio.Event()

    async def control():
        line = await loop.run_in_executor(None, sys.stdin.readline)
        assert line.strip() == "stop", line
        stop.set()
    ctl = asyncio.ensure_future(control())
    seq = 0
    outage_from = -1
    while_down = 0
    refused = collections.Counter()
    while not stop.is_set():
        for _ in range(100):
            try:
                await nc.publish("bound.out", b"%010d" % seq + FILL)
            except NatsError as e:
                refused[e.code] += 1
                continue
            if nc.status != "connected":
                while_down += 1
                if outage_from < 0:
                    outage_from = seq
            seq += 1
        await asyncio.sleep(0.001)
    await ctl
    await nc.flush(10)
    codes = ",".join(f"{k}:{v}" for k, v in sorted(refused.items())) or "-"
    errs = ",".join(f"{k}:{v}" for k, v in sorted(errors.items())) or "-"
    print(f"result accepted={seq} outage_from={outage_from} while_down={while_down} refused={sum(refused.values())} codes={codes} "
          f"errors={errs} statuses={','.join(statuses) or '-'}", flush=True)
    assert (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "quit"
    await nc.close()


asyncio.run(main())
