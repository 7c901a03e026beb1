"""A stand-in for nats-py's package, for tests/natspy/test_natspy_runner.py: the
runner's "natspy" side imports this, the "tclnats" side tclnats_py.natspy."""

import asyncio


class _Errors:
    class TimeoutError(asyncio.TimeoutError):
        pass


errors = _Errors()


class NATS:
    def __init__(self):
        self._server_pool = []   # a private attribute (read by a test)
        self._hidden_state = 1   # another one, not served by tclnats_py


async def connect(*args, **kwargs):
    return NATS()
