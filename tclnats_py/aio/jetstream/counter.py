"""Counter: the counters of a stream with ``allow_msg_counter`` (ADR-49)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from tclnats_py.engine.js import counter as _counter

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.jsface.info import StreamInfo


class Counter:
    """The counters of one stream (``await js.counter(stream)``): one per
    subject, integers of any size.  A stream without counters refuses
    :meth:`add` with the server's error (ErrJSResponse, err_code 10168)."""

    def __init__(self, js: JetStream, stream: str, info: StreamInfo):
        self.js = js
        self.stream = stream
        self.info = info
        self._direct = bool((info.get("config") or {}).get("allow_direct"))

    def __repr__(self):
        return f"<Counter {self.stream}>"

    async def add(self, subject: str, delta: int | str, timeout: float | None = None) -> int:
        """Add ``delta`` (an int, negative to subtract, or its decimal text)
        to the counter of ``subject``; its new value.  ErrInvalidArg for a
        delta that is not an integer."""
        ms = None if timeout is None else int(timeout * 1000)
        return await self.js.run(_counter.add(self.js.jsapi, subject, delta, ms))

    async def get(self, subject: str) -> int:
        """The counter of ``subject``; ErrMsgNotFound when nothing was added to it."""
        return await self.js.run(_counter.get(self.js.jsapi, self.stream, subject, self._direct))

    async def get_many(self, subjects: Iterable[str]) -> dict[str, int]:
        """The counters of ``subjects``: subject -> value, for those that have one."""
        return await self.js.run(_counter.get_many(self.js.jsapi, self.stream, list(subjects), self._direct))
