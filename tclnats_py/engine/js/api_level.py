"""JetStream API levels (ADR-44): which server a feature needs, and the check.

A nats-server announces the JetStream API level it supports in the reply to
``$JS.API.INFO`` (``{"api": {"level": 5, ...}}``); a server before 2.11 has no
level (0).  A feature of a newer server, asked of an older one, is refused
here before anything is sent, with ErrServerTooOld naming the version it
needs, instead of a server reply that does not say why (an older server
drops config fields it does not know, or answers a new header with a
generic error).

Levels by server version, from nats-server's ``JSApiLevel`` (ADR-44 lists
the first two; there was no 2.13 release)::

    0  < 2.11      1  2.11      2  2.12      4  2.14      5  2.15

The level is asked once per :class:`~tclnats_py.engine.js.api.JsApi` and kept
on it (a face keeps one JsApi per JetStream context).  A server of level 2 or
more also checks ``Nats-Required-Api-Level`` on any ``$JS.API`` request
(:data:`REQUIRED_LEVEL_HEADER`); :func:`level_header` gives its value.
"""

from __future__ import annotations

from tclnats_py.engine.js.api import JsApi, Op
from tclnats_py.errors import make_error

__all__ = ["FEATURES", "REQUIRED_LEVEL_HEADER", "require_level", "server_level", "level_from_info",
           "too_old", "level_header", "known_level"]

#: the header with which a request asks the server for a minimum API level (ADR-44)
REQUIRED_LEVEL_HEADER = "Nats-Required-Api-Level"

#: feature -> (JetStream API level, first server version that has it)
FEATURES: dict[str, tuple[int, str]] = {
    # ADR-43 per-message TTL: stream allow_msg_ttl, publish Nats-TTL
    "msg_ttl": (1, "2.11"),
    # ADR-43 limit markers: stream subject_delete_marker_ttl
    "subject_delete_marker_ttl": (1, "2.11"),
    # ADR-48: KV bucket limit_marker_ttl, create/purge with a TTL
    "kv_limit_marker_ttl": (1, "2.11"),
    "kv_key_ttl": (1, "2.11"),
    # consumer pause_until, CONSUMER.PAUSE (pause and resume)
    "consumer_pause": (1, "2.11"),
    # CONSUMER.RESET
    "consumer_reset": (4, "2.14"),
    # ADR-42 priority groups: overflow and pinned_client policies, CONSUMER.UNPIN
    "priority_groups": (1, "2.11"),
    "priority_overflow": (1, "2.11"),
    "priority_pinned": (1, "2.11"),
    # ADR-42 rev 4: the prioritized policy
    "priority_prioritized": (2, "2.12"),
    # ADR-31 rev 2: DIRECT.GET with batch and multi_last
    "direct_get_batch": (1, "2.11"),
    "direct_get_multi_last": (1, "2.11"),
    # publish header Nats-Expected-Last-Subject-Sequence-Subject
    "expected_last_subject_seq_subject": (1, "2.11"),
    # ADR-49: stream allow_msg_counter, Nats-Incr
    "counters": (2, "2.12"),
    # ADR-50: stream allow_atomic, Nats-Batch-* (rev 5 & 7: 2.14's commit without storing, fast batch)
    "atomic_batch": (2, "2.12"),
    "fast_batch": (4, "2.14"),
    # ADR-51: stream allow_msg_schedules, "@at" schedules; "@every", cron and time zones came in 2.14
    "schedules": (2, "2.12"),
    "schedules_every_cron": (4, "2.14"),
    "schedule_time_zone": (4, "2.14"),
    # ADR-51: Nats-Schedule-Source (a subject's last message published on the schedule)
    "schedule_source": (4, "2.14"),
    # ADR-56: stream persist_mode async
    "async_persist": (2, "2.12"),
    # consumer ack_policy flow_control
    "ack_flow_control": (4, "2.14"),
}

# where a JsApi keeps the level it was told
_CACHE = "_api_level"


def level_from_info(info: dict) -> int:
    """The API level of an ``$JS.API.INFO`` reply (0 when it has none:
    a server before 2.11)."""
    api = info.get("api") if isinstance(info, dict) else None
    level = api.get("level") if isinstance(api, dict) else None
    return level if isinstance(level, int) and not isinstance(level, bool) and level > 0 else 0


def known_level(api: JsApi) -> int | None:
    """The level this JsApi was told already, None before it asked (a
    driver that must not wait for a request can decide on it)."""
    return getattr(api, _CACHE, None)


def server_level(api: JsApi) -> Op[int]:
    """Operation: the server's JetStream API level, asked once per JsApi."""
    level = getattr(api, _CACHE, None)
    if level is None:
        level = level_from_info((yield from api.account_info()))
        setattr(api, _CACHE, level)
    return level


def too_old(feature: str, have: int):
    """The ErrServerTooOld for ``feature`` on a server of API level ``have``."""
    need, version = FEATURES[feature]
    return make_error("ErrServerTooOld",
                      f"{feature.replace('_', ' ')} needs nats-server {version} or newer (JetStream API level "
                      f"{need}); the server has API level {have}",
                      feature=feature, level=need, version=version, server_level=have)


def require_level(api: JsApi, feature: str) -> Op[int]:
    """Operation: the server's API level, or ErrServerTooOld when it is below
    what ``feature`` (a key of :data:`FEATURES`) needs."""
    need = FEATURES[feature][0]
    have = yield from server_level(api)
    if have < need:
        raise too_old(feature, have)
    return have


def level_header(feature: str) -> str:
    """The :data:`REQUIRED_LEVEL_HEADER` value for ``feature``."""
    return str(FEATURES[feature][0])
