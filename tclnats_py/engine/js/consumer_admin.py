"""Consumer pause, resume and reset: JetStream API operations of nats-server 2.11 and 2.14.

``CONSUMER.PAUSE.<stream>.<consumer>`` (2.11) stops deliveries until a time
(``{"pause_until": RFC 3339}``); a time already past, or none, resumes.  The
reply is ``{"paused", "pause_until", "pause_remaining" (ns)}``.
``CONSUMER.RESET.<stream>.<consumer>`` (2.14, ADR-60) clears the pending and
redelivered state and restarts delivery above the ack floor, or at stream
sequence ``seq``; the reply is the consumer's info plus ``reset_seq``.

Each checks the server's API level first (ErrServerTooOld naming the version
needed: engine/js/api_level.py) and sends ``Nats-Required-Api-Level``, so a
server that does not know the call says so instead of timing out.
"""

from __future__ import annotations

import datetime

from tclnats_py.errors import make_error
from tclnats_py.engine.js.api import JsApi, Op, api_call, check_name, ms_to_iso
from tclnats_py.engine.js.api_level import REQUIRED_LEVEL_HEADER, level_header, require_level

__all__ = ["pause_consumer", "resume_consumer", "reset_consumer", "pause_time", "RESUMED"]

#: the pause_until of a resume: a time long past (what nats.go and nats-py send)
RESUMED = "1970-01-01T00:00:00Z"


def pause_time(until) -> str:
    """An RFC 3339 UTC time from a ``datetime`` (naive: UTC), ms since the
    epoch (an int), or RFC 3339 text (kept as it is)."""
    if isinstance(until, datetime.datetime):
        if until.tzinfo is None:
            until = until.replace(tzinfo=datetime.timezone.utc)
        return until.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(until, int) and not isinstance(until, bool) and until >= 0:
        return ms_to_iso(until)
    if isinstance(until, str) and until.strip() and "T" in until:
        return until
    raise make_error("ErrInvalidArg", f"Invalid pause_until {until!r}: an RFC 3339 time, a datetime or ms expected")


def _call(api: JsApi, feature: str, tail: str, body: dict | None) -> Op[dict]:
    yield from require_level(api, feature)
    req = api.request(tail, body)
    req.headers = {REQUIRED_LEVEL_HEADER: [level_header(feature)]}
    return (yield from api_call(req))


def pause_consumer(api: JsApi, stream: str, consumer: str, until) -> Op[dict]:
    """Operation: pause ``consumer`` until ``until`` (see :func:`pause_time`);
    the reply (paused, pause_until, pause_remaining in ns)."""
    check_name("stream", stream)
    check_name("consumer", consumer)
    body = {"pause_until": pause_time(until)}
    return (yield from _call(api, "consumer_pause", f"CONSUMER.PAUSE.{stream}.{consumer}", body))


def resume_consumer(api: JsApi, stream: str, consumer: str) -> Op[dict]:
    """Operation: deliveries go on now (a pause until a time long past)."""
    return (yield from pause_consumer(api, stream, consumer, RESUMED))


def reset_consumer(api: JsApi, stream: str, consumer: str, seq: int | None = None) -> Op[dict]:
    """Operation: reset the consumer's delivery state (2.14); with ``seq``
    the next message delivered is at stream sequence ``seq`` or above.  The
    reply: the consumer's info and ``reset_seq``."""
    check_name("stream", stream)
    check_name("consumer", consumer)
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 0):
        raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option seq : {seq}")
    body = {"seq": seq} if seq else None
    return (yield from _call(api, "consumer_reset", f"CONSUMER.RESET.{stream}.{consumer}", body))
