"""Small helpers of the asyncio-face tests."""

import asyncio
import time


async def settle(cond, timeout=10.0):
    """Wait until ``cond()`` is true, polling; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)
