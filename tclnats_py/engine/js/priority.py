"""Priority groups of pull consumers (ADR-42): overflow, pinned client, prioritized.

A consumer made with ``priority_policy`` and ``priority_groups`` serves only
pull requests naming one of its groups; without it the server answers 400
"Priority Group missing".  The policies add fields to the pull request:

=================  ========================================================
``overflow``       ``min_pending`` / ``min_ack_pending``: serve this pull
                   only while the consumer has at least that many pending
                   (or ack-pending) messages (either one satisfied is enough)
``pinned_client``  ``id``: the pin the server gave this client; the first
                   message to the pinned client, and every later one, carry
                   it in ``Nats-Pin-Id``.  A pull with an ``id`` that is no
                   longer the pin gets status 423 (``Nats-Wrong-Pin-Id`` /
                   ``Nats-Pin-Id mismatch``): the client forgets the pin and
                   pulls without one, standing by for the next pin
``prioritized``    ``priority``: 0 (the default) to 9, lower ones served first
=================  ========================================================

A pinned client that stops pulling for ``priority_timeout`` (``pinned_ttl`` in
the faces) loses the pin to a standby pull; ``$JS.API.CONSUMER.UNPIN`` takes it
away at once (:func:`consumer_unpin`).  A server before 2.11 (2.12 for
``prioritized``) does not know these fields and would make a plain consumer:
:func:`consumer_create` refuses such a config there with ErrServerTooOld
(ADR-44 API levels).  :class:`PullGroup` holds one pull's group fields; the pins live
in a plain dict group -> pin id that a face keeps per consumer and hands to
every PullGroup of that consumer, so later pulls carry the pin earlier ones got.
"""

from __future__ import annotations

import json
import re

from tclnats_py.errors import make_error
from tclnats_py.engine.js.api import JsApi, Op, Request, api_call, check_name
from tclnats_py.engine.js.api_level import require_level

__all__ = ["PIN_ID", "POLICIES", "PRIORITY_SPEC", "WIRE_NAMES", "PullGroup", "check_group", "to_wire",
           "from_wire", "unpin_body", "consumer_unpin", "consumer_create"]

#: the header that gives the pinned client its pin
PIN_ID = "Nats-Pin-Id"

POLICIES = ("none", "overflow", "pinned_client", "prioritized")

#: the consumer config fields, in the faces' names (``pinned_ttl``, a
#: duration in the face's unit, goes to the wire as ``priority_timeout``)
PRIORITY_SPEC = (
    ("priority_policy", ("enum",) + POLICIES, None),
    ("priority_groups", "list", None),
    ("pinned_ttl", "ns", None),
)

#: face name -> wire name of the fields above that differ
WIRE_NAMES = {"pinned_ttl": "priority_timeout"}

# ADR-6 "limited-term", at most 16 characters (ADR-42)
_GROUP = re.compile(r"^[A-Za-z0-9_\-/=]{1,16}$")

MAX_PRIORITY = 9


def check_group(group) -> str:
    if not isinstance(group, str) or not _GROUP.match(group):
        raise make_error("ErrInvalidArg", f"Invalid priority group {group!r} (1 to 16 of A-Z a-z 0-9 - _ / =)")
    return group


def to_wire(cfg: dict) -> dict:
    """A consumer config built from PRIORITY_SPEC's names, in wire names;
    every group checked, and a pinned_ttl only with the pinned_client policy."""
    for face, wire in WIRE_NAMES.items():
        if face in cfg:
            cfg[wire] = cfg.pop(face)
    for g in cfg.get("priority_groups") or ():
        check_group(g)
    if cfg.get("priority_timeout") and cfg.get("priority_policy") != "pinned_client":
        # the pin's lifetime means nothing under another policy (the server refuses it)
        raise make_error("ErrInvalidArg", "pinned_ttl is only for priority_policy pinned_client")
    return cfg


def from_wire(data: dict) -> dict:
    """A consumer config from the server with the faces' names."""
    out = dict(data)
    for face, wire in WIRE_NAMES.items():
        if wire in out:
            out[face] = out.pop(wire)
    return out


def _count(name, v):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option {name} : {v}")
    return v


class PullGroup:
    """The priority-group fields of a pull request and the consumer's pins.

    ``pins`` is the dict (group -> pin id) the face keeps for the consumer;
    :meth:`fields` adds ``group``, the pin as ``id`` and the policy fields to
    a pull request's JSON; :meth:`saw` takes the pin a delivered message
    carries (one header look-up when the message has headers); :meth:`lost`
    forgets it on a 423.
    """

    __slots__ = ("group", "min_pending", "min_ack_pending", "priority", "pins")

    def __init__(self, group: str, *, min_pending: int | None = None, min_ack_pending: int | None = None,
                 priority: int | None = None, pins: dict | None = None):
        self.group = check_group(group)
        self.min_pending = _count("min_pending", min_pending)
        self.min_ack_pending = _count("min_ack_pending", min_ack_pending)
        if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)
                                     or not 0 <= priority <= MAX_PRIORITY):
            raise make_error("ErrInvalidArg", f"Invalid priority {priority!r} (0 to {MAX_PRIORITY})")
        self.priority = priority
        self.pins = {} if pins is None else pins

    @property
    def pin(self) -> str | None:
        return self.pins.get(self.group)

    def fields(self, body: dict) -> dict:
        body["group"] = self.group
        pin = self.pins.get(self.group)
        if pin:
            body["id"] = pin
        if self.min_pending is not None:
            body["min_pending"] = self.min_pending
        if self.min_ack_pending is not None:
            body["min_ack_pending"] = self.min_ack_pending
        if self.priority is not None:
            body["priority"] = self.priority
        return body

    def saw(self, headers) -> None:
        """A delivered message's headers (a mapping of lists): keep its pin."""
        v = dict.get(headers, PIN_ID)
        if v:
            self.pins[self.group] = v[0] if isinstance(v, list) else v

    def lost(self) -> bool:
        """A 423: the pin this client sent is not the server's any more.
        True when there was one to forget (the caller pulls again without it)."""
        return self.pins.pop(self.group, None) is not None


def unpin_body(group: str) -> bytes:
    """The payload of ``$JS.API.CONSUMER.UNPIN.<stream>.<consumer>``."""
    return json.dumps({"group": check_group(group)}, separators=(",", ":")).encode()


def _feature(policy) -> str | None:
    if not policy or policy == "none":
        return None
    return "priority_prioritized" if policy == "prioritized" else f"priority_{policy.split('_')[0]}"


def consumer_create(api: JsApi, req: Request, config: dict) -> Op[dict]:
    """Operation: the CONSUMER.CREATE request ``req`` of ``config`` (wire
    names), after checking that the server has the priority policy it asks
    for (ErrServerTooOld); the reply."""
    feature = _feature(config.get("priority_policy"))
    if feature is not None:
        yield from require_level(api, feature)
    return (yield from api_call(req))


def consumer_unpin(api: JsApi, stream: str, consumer: str, group: str) -> Op[bool]:
    """Operation: take the pin of ``group`` from its pinned client; the server
    pins another waiting pull.  True."""
    check_name("stream", stream)
    check_name("consumer", consumer)
    body = unpin_body(group)
    yield from require_level(api, "priority_pinned")
    yield from api.call(f"CONSUMER.UNPIN.{stream}.{consumer}", body)
    return True
