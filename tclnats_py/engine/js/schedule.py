"""Message schedules (ADR-51): a message that a stream holds and publishes
again, on its schedule, to a target subject of the same stream.

A schedule is a publish to a subject of its own (one schedule per subject:
publishing to the subject again replaces it) carrying the headers of
:data:`~tclnats_py.engine.js.publish.SCHEDULE_HEADERS`:

* ``Nats-Schedule``: ``@at <RFC 3339 time>`` (once, then the schedule is
  removed), ``@every <Go duration>`` (1 s or more), a cron spec of six fields
  (seconds minutes hours day-of-month month day-of-week) or one of the
  predefined ``@yearly`` ... ``@hourly``;
* ``Nats-Schedule-Target``: where the messages go (a subject of the stream,
  not the schedule's own);
* optionally ``Nats-Schedule-Time-Zone`` (cron only: an IANA name the
  server's tzdata knows), ``Nats-Schedule-TTL`` (a per-message TTL of each
  message produced; the stream needs ``allow_msg_ttl``) and
  ``Nats-Schedule-Source`` (publish the last message of that subject
  instead of the schedule's own body).

The stream needs ``allow_msg_schedules``.  A schedule stops when its message
goes: purge its subject (or delete its sequence).  What a client can check
is checked here before anything is sent (ErrInvalidArg, ErrBadSubject);
the server's refusals (ErrJSResponse, their ``err_code`` below) come back
with the value it refused.  nats-server 2.12 has ``@at`` only, 2.14 the rest
(``api_level``: ErrServerTooOld before the publish).
"""

from __future__ import annotations

import datetime
import re

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.api import JsApi, Op, Request
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.js.publish import (SCHEDULE_HEADERS, SCHEDULER, parse_ack, publish_headers, ttl_from_ms,
                                          ttl_from_seconds)
from tclnats_py.engine.subjects import valid_subject

__all__ = ["SCHEDULE", "SCHEDULER", "TARGET", "SOURCE", "TTL", "TIME_ZONE", "NEXT", "PREDEFINED", "FEATURE",
           "FEATURE_REPEAT", "FEATURE_SOURCE", "FEATURE_TIME_ZONE", "ERRORS", "at_pattern", "every_pattern",
           "cron_pattern", "go_duration_seconds", "schedule_headers", "publish_schedule"]

SCHEDULE, TARGET, SOURCE, TTL, TIME_ZONE, NEXT = (
    SCHEDULE_HEADERS[k] for k in ("", "-Target", "-Source", "-TTL", "-Time-Zone", "-Next"))

FEATURE = "schedules"                    # @at
FEATURE_REPEAT = "schedules_every_cron"  # @every, cron
FEATURE_SOURCE = "schedule_source"
FEATURE_TIME_ZONE = "schedule_time_zone"

#: the server's refusals of a schedule (err_code -> the header it is about, None for the stream)
ERRORS = {10188: None, 10189: SCHEDULE, 10190: TARGET, 10191: TTL, 10192: SCHEDULE_HEADERS["-Rollup"],
          10203: SOURCE, 10223: TIME_ZONE, 10166: TTL}

#: the cron shorthands the server knows
PREDEFINED = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _bad(what: str, value, why: str) -> NatsError:
    return make_error("ErrInvalidArg", f"Invalid {what} {value!r}: {why}")


# ------------------------------------------------------------------ @at
# Go's time.RFC3339 as time.Parse reads it: fractional seconds allowed
_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:Z|([+-])(\d\d):(\d\d))\Z")


def at_pattern(at) -> str:
    """``@at <time>`` of a ``datetime`` (a naive one is local time, as
    Python's ``astimezone`` takes it; sent in UTC) or of RFC 3339 text
    (``2030-01-02T03:04:05Z``, an offset instead of ``Z``, fractions of a
    second), sent as it is."""
    if isinstance(at, datetime.datetime):
        utc = at.astimezone(datetime.timezone.utc)
        frac = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
        return f"@at {utc:%Y-%m-%dT%H:%M:%S}{frac}Z"
    if not isinstance(at, str):
        raise _bad("schedule time", at, "a datetime or RFC 3339 text expected")
    m = _RFC3339.match(at)
    if m is None:
        raise _bad("schedule time", at, "RFC 3339 expected, e.g. 2030-01-02T03:04:05Z")
    year, month, day, hour, minute, sec, _sign, oh, om = m.groups()
    try:
        datetime.datetime(int(year), int(month), int(day), int(hour), int(minute), int(sec))
    except ValueError as e:
        raise _bad("schedule time", at, str(e)) from None
    if oh is not None and (int(oh) > 23 or int(om) > 59):
        raise _bad("schedule time", at, "the offset is out of range")
    return "@at " + at


# ------------------------------------------------------------------ @every
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def go_duration_seconds(text: str) -> float | None:
    """The seconds of a Go duration (``time.ParseDuration``: ``1h30m``,
    ``1.5s``, ``500ms``), None when it is not one."""
    if not isinstance(text, str):
        return None
    body = text[1:] if text[:1] in ("+", "-") else text
    if body == "0":
        return 0.0
    total, pos = 0.0, 0
    while pos < len(body):
        m = _GO_PART.match(body, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    if not body:
        return None
    return -total if text[:1] == "-" else total


def _duration_text(seconds: float) -> str:
    ms = seconds * 1000
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    if ms == int(ms):
        return f"{int(ms)}ms"
    return f"{round(seconds * 1e9)}ns"


def every_pattern(every, unit: str = "s") -> str:
    """``@every <Go duration>`` of an interval in ``unit`` ("s": seconds, an
    int, float or ``timedelta``; "ms": milliseconds, an int or its decimal
    text) or of a Go duration text (``"5m"``); 1 second or more."""
    if isinstance(every, str):
        text = every.strip()
        if unit == "ms" and re.fullmatch(r"\d+", text):
            return every_pattern(int(text), unit)
        seconds = go_duration_seconds(text)
        if seconds is None:
            raise _bad("schedule interval", every, "a Go duration such as 30s or 1h expected")
        if seconds < 1:
            raise _bad("schedule interval", every, "1 second or more")
        return "@every " + text
    if isinstance(every, datetime.timedelta):
        seconds = every.total_seconds()
    elif isinstance(every, (int, float)) and not isinstance(every, bool) and every == every:
        seconds = every / 1000 if unit == "ms" else float(every)
    else:
        raise _bad("schedule interval", every, "a number expected")
    if not 1 <= seconds < float("inf"):
        raise _bad("schedule interval", every, f"1 second or more{' (in ms)' if unit == 'ms' else ''}")
    return "@every " + _duration_text(seconds)


# ------------------------------------------------------------------ cron
_MONTHS = {n: i + 1 for i, n in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}
_DAYS = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# the six fields: name, least, most, names
_FIELDS = (("seconds", 0, 59, None), ("minutes", 0, 59, None), ("hours", 0, 23, None),
           ("day of month", 1, 31, None), ("month", 1, 12, _MONTHS), ("day of week", 0, 6, _DAYS))


def _cron_number(text: str, names) -> int | None:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return int(text) if re.fullmatch(r"\+?\d{1,9}", text) else None


def _cron_range(expr: str, least: int, most: int, names) -> str | None:
    """Why one range of a cron field is wrong, None when it is right (the
    server's grammar: ``*``/``?``, ``n``, ``n-m``, each with ``/step``)."""
    range_step = expr.split("/")
    low_high = range_step[0].split("-")
    if len(range_step) > 2 or len(low_high) > 2:
        return "too many '/' or '-'"
    if low_high[0] in ("*", "?") and len(low_high) == 1:
        start, end = least, most
    else:
        nums = [n for n in (_cron_number(t, names) for t in low_high) if n is not None]
        if len(nums) != len(low_high):
            return "a number" + (" or a name" if names else "") + " expected"
        start, end = nums[0], nums[-1]
        if len(range_step) == 2 and len(low_high) == 1:
            end = most  # "n/step" is "n-most/step"
    if len(range_step) == 2:
        step = _cron_number(range_step[1], None)
        if not step:
            return "the step must be a positive number"
    if start < least or end > most:
        return f"out of range {least}-{most}"
    if start > end:
        return "the range's start is past its end"
    return None


def cron_pattern(cron) -> str:
    """A cron spec checked: six fields (seconds minutes hours day-of-month
    month day-of-week; ``*``, ``?``, lists, ranges, steps, month and day
    names), or one of :data:`PREDEFINED`."""
    if not isinstance(cron, str) or not cron.strip():
        raise _bad("cron spec", cron, "six fields or one of " + ", ".join(PREDEFINED))
    spec = cron.strip()
    if spec.startswith("@"):
        if spec not in PREDEFINED:
            raise _bad("cron spec", cron, "the predefined ones are " + ", ".join(PREDEFINED))
        return spec
    fields = spec.split()
    if len(fields) != 6:
        raise _bad("cron spec", cron, f"six fields (seconds minutes hours day-of-month month day-of-week), "
                                      f"not {len(fields)}")
    for text, (name, least, most, names) in zip(fields, _FIELDS):
        for expr in text.split(","):
            why = _cron_range(expr, least, most, names) if expr else "an empty list item"
            if why is not None:
                raise _bad("cron spec", cron, f"{name} {expr!r}: {why}")
    return spec


# ------------------------------------------------------------------ the publish
def _check_subject(what: str, subject) -> str:
    if not isinstance(subject, str) or not valid_subject(subject):
        raise make_error("ErrBadSubject", f"Invalid {what} {subject!r}: a subject without wildcards expected")
    return subject


def _pattern(at, every, cron, unit: str) -> tuple[str, str]:
    given = [k for k, v in (("at", at), ("every", every), ("cron", cron)) if v is not None]
    if len(given) != 1:
        raise make_error("ErrInvalidArg", "A schedule needs one of at, every or cron"
                         + (f", not {' and '.join(given)}" if given else ""))
    if at is not None:
        return at_pattern(at), FEATURE
    if every is not None:
        return every_pattern(every, unit), FEATURE_REPEAT
    return cron_pattern(cron), FEATURE_REPEAT


def schedule_headers(subject: str, headers=None, *, target: str | None, at=None, every=None, cron=None,
                     time_zone: str | None = None, ttl=None, source: str | None = None,
                     unit: str = "s") -> tuple[dict, list[str]]:
    """The headers of a schedule published to ``subject`` (ADR-4 shape:
    key -> list of values) and the features (:data:`api_level.FEATURES`) it
    needs.  ``every`` and ``ttl`` are in ``unit`` ("s" or "ms"); ``ttl`` also
    ``"never"`` or a Go duration text.  ``headers`` go with it verbatim (they
    reach each message produced) and may not name a schedule header."""
    _check_subject("schedule subject", subject)
    if target is None:
        raise make_error("ErrInvalidArg", "A schedule needs a target: the subject its messages go to")
    _check_subject("schedule target", target)
    if target == subject:
        raise make_error("ErrInvalidArg", f"The schedule target {target!r} must differ from its subject")
    pattern, feature = _pattern(at, every, cron, unit)
    features = [feature]
    out = publish_headers(headers) or {}
    taken = {h.lower() for h in SCHEDULE_HEADERS.values()}
    for k in out:
        if k.lower() in taken:
            raise make_error("ErrInvalidArg", f"The header {k} is the schedule's own: use its option instead")
    out[SCHEDULE] = [pattern]
    out[TARGET] = [target]
    if time_zone is not None:
        if cron is None:
            raise make_error("ErrInvalidArg", "A time zone goes with a cron schedule only, not with at or every")
        if not isinstance(time_zone, str) or not time_zone or time_zone != time_zone.strip() or " " in time_zone:
            raise _bad("time zone", time_zone, "an IANA name such as Europe/Amsterdam, or UTC")
        if time_zone[:1] in "+-" or time_zone[:1].isdigit():
            raise _bad("time zone", time_zone, "a name such as Europe/Amsterdam, not an offset")
        out[TIME_ZONE] = [time_zone]
        features.append(FEATURE_TIME_ZONE)
    if ttl is not None:
        out[TTL] = [ttl_from_ms(ttl) if unit == "ms" else ttl_from_seconds(ttl)]
    if source is not None:
        _check_subject("schedule source", source)
        if source in (subject, target):
            raise make_error("ErrInvalidArg",
                             f"The schedule source {source!r} must differ from its subject and target")
        out[SOURCE] = [source]
        features.append(FEATURE_SOURCE)
    return out, features


def _explain(err: NatsError, headers: dict) -> NatsError:
    """The server's refusal of a schedule with the value it refused."""
    if err.code != "ErrJSResponse" or err.details.get("err_code") not in ERRORS:
        return err
    header = ERRORS[err.details["err_code"]]
    if header is None:
        why = "the stream needs allow_msg_schedules"
    elif header not in headers:
        return err
    else:
        why = f"{header}: {headers[header][0]}"
        if header == SCHEDULE and TIME_ZONE in headers:
            why += f", {TIME_ZONE}: {headers[TIME_ZONE][0]}"
        if err.details["err_code"] == 10166:
            why += " (the stream needs allow_msg_ttl)"
    return type(err)(f"{err.message} ({why})", **err.details)


def publish_schedule(api: JsApi, subject: str, payload: bytes, headers: dict, features,
                     timeout: int | None = None) -> Op[dict]:
    """Operation: store the schedule (``headers`` and ``features`` from
    :func:`schedule_headers`) and return its PubAck, after the server's API
    level was checked for each feature (ErrServerTooOld)."""
    for feature in features:
        yield from require_level(api, feature)
    reply = yield Request(subject, payload, headers, api.default_timeout if timeout is None else timeout)
    try:
        return parse_ack(reply)
    except NatsError as e:
        raise _explain(e, headers) from None
