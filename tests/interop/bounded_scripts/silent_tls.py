"""Child of tests/interop/test_bounded.py: connect to a TLS server that never answers
the handshake.   python3 silent_tls.py URL CONNECT_TIMEOUT_MS

stdout: ``result raised=CODE elapsed_ms=N``.  stderr is checked by the test
for asyncio's reports of lost exceptions ("Task exception was never
retrieved", "Exception in callback").
"""

import asyncio
import gc
import sys
import time

import tclnats_py
from tclnats_py import NatsError

URL, TIMEOUT_MS = sys.argv[1], int(sys.argv[2])


async def main():
    t0 = time.monotonic()
    raised = "-"
    try:
        nc = await tclnats_py.connect(URL, connect_timeout_ms=TIMEOUT_MS,
                                      tls_verify=False)
    except NatsError as e:
        raised = e.code
    else:
        await nc.close()
        raised = "connected"
    elapsed = (time.monotonic() - t0) * 1000
    # let whatever the failed attempt left behind run and be collected while
    # the loop still runs (a lost exception is reported then)
    await asyncio.sleep(0.5)
    gc.collect()
    await asyncio.sleep(0.1)
    print(f"result raised={raised} elapsed_ms={elapsed:.0f}", flush=True)


asyncio.run(main())
gc.collect()
