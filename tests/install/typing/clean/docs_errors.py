"""The Python guide's error-handling lines, in a typed function."""

from __future__ import annotations

import tclnats_py


async def docs_errors(nc: tclnats_py.Client) -> None:
    try:
        reply = await nc.request("svc", b"ping", timeout=1)
    except tclnats_py.ErrNoResponders:
        ...                                  # nobody subscribes to svc
    except TimeoutError:
        ...                                  # ErrTimeout
    else:
        print(reply.data)
