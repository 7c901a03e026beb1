"""The steps of one :class:`~tclnats_py.engine.js.pull.Fetch` on an inbox of
its own: what a face's ``Consumer.fetch`` does, written once for every face
that waits for the messages itself (the asyncio and blocking faces).

:func:`fetch_steps` is an operation (a generator, see ``engine.js.api``)
yielding ``api.Publish`` (a pull request: the first, and the same again when
a pin went stale) and :class:`~tclnats_py.engine.js.inbox_fetch.NextMsg`
(the driver waits for the inbox's next message until the step's deadline and
sends back ``(msg, now)``: msg None when the deadline passed, :data:`ENDED`
when the inbox subscription ended, as when the connection closed).  It
returns when the fetch is done; its outcome is then ``fetch.result()``.
Times are the driver's clock, in seconds; the engine reads no clock.
"""

from __future__ import annotations

from typing import Any, Generator

from tclnats_py.engine.js.api import Publish
from tclnats_py.engine.js.events import Pull
from tclnats_py.engine.js.inbox_fetch import NextMsg
from tclnats_py.engine.js.pull import Fetch

__all__ = ["ENDED", "fetch_steps"]

#: what the driver sends back for a NextMsg when the inbox subscription has ended
ENDED = False


def fetch_steps(f: Fetch, next_subject: str, inbox: str, now: float) -> Generator[Any, Any, None]:
    """Send ``f``'s pull request to ``next_subject`` with replies to
    ``inbox`` and feed ``f`` what arrives until it is done, its time is up
    (``f.timeout_ms`` from ``now``) or the server's idle heartbeats stop
    (``f.heartbeat_timeout_ms`` of silence)."""
    yield Publish(next_subject, f.body, inbox)
    deadline = now + f.timeout_ms / 1000
    hb = f.heartbeat_timeout_ms / 1000 if f.heartbeat_timeout_ms else None
    while not f.done:
        silence = hb is not None and now + hb < deadline  # the heartbeats' wait ends first
        msg, now = yield NextMsg(now + hb if hb is not None and silence else deadline)
        if msg is None or msg is ENDED:
            if msg is None and silence:
                f.on_heartbeat_missed()
            else:
                f.on_timeout()
            return
        for ev in f.on_msg(msg):
            if ev.__class__ is Pull:  # the pin went stale: the same pull again, unpinned
                yield Publish(next_subject, ev.body, inbox)
                deadline = now + f.timeout_ms / 1000
