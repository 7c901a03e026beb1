"""Counters (ADR-49): a stream with ``allow_msg_counter`` keeps, per subject,
an integer of any size that publishes add to.

An increment is a publish with an empty body and the header ``Nats-Incr``
(a decimal integer, signed or not); the PubAck carries the subject's new
value as a decimal string (``"val"``).  The stored message's body is
``{"val":"<decimal>"}``, so the value is read with a get of the subject's
last message.  Values are Python ints here: the server's decimal strings
have no size limit and neither do ints.

The server refuses, with an API error (ErrJSResponse, its ``err_code``):
an increment to a stream without counters (:data:`ERR_COUNTERS_DISABLED`),
a publish without ``Nats-Incr`` or with a body to a counter stream
(:data:`ERR_INCR_MISSING`, :data:`ERR_INCR_HAS_PAYLOAD`), an increment it
cannot read (:data:`ERR_INCR_INVALID`); a delta that is not an integer is
refused here first, ErrInvalidArg.  Each operation checks the server's API
level before its first request (``api_level``, feature ``counters``).
"""

from __future__ import annotations

import json
import re

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.api import (Batch, JsApi, Op, Request, check_name, parse_json, stored_from_direct,
                                      stored_from_get)
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.js.publish import parse_ack
from tclnats_py.engine.subjects import valid_subject

__all__ = ["INCR", "COUNTER_SOURCES", "FEATURE", "ERR_COUNTERS_DISABLED", "ERR_INCR_MISSING",
           "ERR_INCR_HAS_PAYLOAD", "ERR_INCR_INVALID", "delta_text", "counter_value", "ack_value", "add",
           "get", "get_many"]

INCR = "Nats-Incr"
#: on a counter sourced from other streams: the values it took from each
COUNTER_SOURCES = "Nats-Counter-Sources"
FEATURE = "counters"

# the API errors (err_code) a counter publish may meet, nats-server's numbers
ERR_COUNTERS_DISABLED = 10168
ERR_INCR_MISSING = 10169
ERR_INCR_HAS_PAYLOAD = 10170
ERR_INCR_INVALID = 10171

_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")


def delta_text(delta) -> str:
    """The ``Nats-Incr`` value of ``delta``: an int (not a bool) or its
    decimal text (an optional sign, digits); ErrInvalidArg for anything else."""
    if isinstance(delta, int) and not isinstance(delta, bool):
        return str(delta)
    if isinstance(delta, str) and _DECIMAL.match(delta.strip()):
        return str(int(delta))
    raise make_error("ErrInvalidArg", f"Invalid counter delta {delta!r}: an integer expected")


def _int_of(text, where: str) -> int:
    if isinstance(text, str) and _DECIMAL.match(text):
        return int(text)
    raise make_error("ErrJSResponse", f"Invalid counter value in {where}: {text!r}")


def ack_value(ack: dict) -> int:
    """The new value a counter's PubAck reports (its ``val``)."""
    return _int_of(ack.get("val"), "the publish ack")


def counter_value(data: bytes) -> int:
    """The value of a counter's stored message (``{"val":"<decimal>"}``)."""
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    return _int_of(body.get("val") if isinstance(body, dict) else None, "the stored message")


def _check_subject(subject) -> str:
    if not isinstance(subject, str) or not valid_subject(subject):
        raise make_error("ErrBadSubject", f"Invalid subject {subject}")
    return subject


def add(api: JsApi, subject: str, delta, timeout: int | None = None) -> Op[int]:
    """Operation: add ``delta`` to the counter of ``subject``; its new value.
    (No expectation headers go with it: a counter stream refuses them as an
    invalid increment.)"""
    incr = delta_text(delta)
    _check_subject(subject)
    yield from require_level(api, FEATURE)
    reply = yield Request(subject, b"", {INCR: [incr]}, api.default_timeout if timeout is None else timeout)
    return ack_value(parse_ack(reply))


def _get_request(api: JsApi, stream: str, subject: str, direct: bool) -> Request:
    if direct:
        return api.direct_get_request(stream, last_by_subj=subject)
    return api.request(f"STREAM.MSG.GET.{stream}", {"last_by_subj": subject})


def _get_result(reply, stream: str, direct: bool) -> int:
    if direct:
        return counter_value(stored_from_direct(reply, stream).data)
    return counter_value(stored_from_get(parse_json(reply), stream).data)


def get(api: JsApi, stream: str, subject: str, direct: bool = False) -> Op[int]:
    """Operation: the value of the counter of ``subject`` in ``stream``
    (ErrMsgNotFound when nothing was ever added to it); ``direct``: by a
    direct get (the stream has ``allow_direct``), else by the stream API."""
    check_name("stream", stream)
    _check_subject(subject)
    yield from require_level(api, FEATURE)
    reply = yield _get_request(api, stream, subject, direct)
    return _get_result(reply, stream, direct)


def get_many(api: JsApi, stream: str, subjects, direct: bool = False) -> Op[dict]:
    """Operation: the values of the counters of ``subjects`` (one request
    each, run together): subject -> int, without the subjects that have none."""
    check_name("stream", stream)
    subjects = [_check_subject(s) for s in ([subjects] if isinstance(subjects, str) else subjects)]
    yield from require_level(api, FEATURE)
    if not subjects:
        return {}
    replies = yield Batch([_get_request(api, stream, s, direct) for s in subjects])
    out: dict = {}
    for subject, reply in zip(subjects, replies):
        try:
            if isinstance(reply, NatsError):
                raise reply
            out[subject] = _get_result(reply, stream, direct)
        except NatsError as e:
            if e.code != "ErrMsgNotFound":
                raise
    return out
