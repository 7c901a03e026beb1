"""Replies of the JetStream API as typed objects that keep the whole JSON.

Each reply class names the fields the server sends as typed attributes
(``info.state.messages: int``, ``ack.seq: int``; durations and times as on
the wire: ns and RFC 3339 strings; ``config`` typed, in seconds), so a type
checker sees a misspelled field (there is no attribute lookup of unnamed
keys any more).  Every reply is still the ``dict`` of the JSON it was made
from (``info["config"]["max_age"]``, ``info.get("x")``, ``json.dumps(info)``),
so fields the server adds that no class names are there; ``as_dict()`` gives
a plain copy.  The dict holds the wire values (``info["config"]`` is the
JSON, ns), the attributes the typed ones (``info.config`` a
:class:`StreamConfig`, seconds).

:class:`Info` is the untyped reply of ``JetStream.api()`` (any JSON): a dict
that also reads as attributes.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any, Callable, ClassVar, Mapping

from tclnats_py.jsface.config import ConsumerConfig, StreamConfig

__all__ = ["Info", "Reply", "StreamInfo", "StreamState", "ClusterInfo", "PeerInfo", "StreamSourceInfo",
           "ConsumerInfo", "SequenceInfo", "PubAck", "BatchAck", "AccountInfo", "ConsumerPauseResponse", "ConsumerResetResponse"]


class Info(dict):  # type: ignore[type-arg,unused-ignore]
    """Any JSON reply (``JetStream.api()``): a dict that also reads as attributes (``info.state.messages``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            v = self[name]
        except KeyError:
            raise AttributeError(name) from None
        return Info(v) if isinstance(v, dict) and not isinstance(v, Info) else v

    def __dir__(self) -> list[str]:
        return list(super().__dir__()) + [k for k in self if isinstance(k, str)]


def _time(s: str | None) -> datetime.datetime | None:
    if not s:
        return None
    from tclnats_py.engine.js.api import iso_to_ms
    return datetime.datetime.fromtimestamp(iso_to_ms(s) / 1000, datetime.timezone.utc)


class Reply(dict[str, Any]):
    """A JSON reply with typed attributes: the subclasses list theirs in
    ``_fields`` (name, default) and convert nested ones with ``_convert``.
    It stays the dict of the JSON as received (wire units; what ``json.dumps``
    writes), so fields no attribute names are there too; :meth:`as_dict`
    gives a plain copy."""

    __slots__ = ()
    _fields: ClassVar[tuple[tuple[str, Any], ...]] = ()
    _convert: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        dict.__init__(self, data or ())
        get = self.get
        conv = self._convert
        for name, default in self._fields:
            v = get(name, default)
            setattr(self, name, conv[name](v) if name in conv else v)

    def as_dict(self) -> dict[str, Any]:
        """The JSON the server sent (a plain deep copy): every field, the ones no attribute names too."""
        return copy.deepcopy(dict(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


def _opt(cls: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else cls(v)


def _many(cls: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: [cls(x) for x in v or ()]


class PeerInfo(Reply):
    """One replica of a clustered stream or consumer; ``active`` in ns."""
    __slots__ = ("name", "current", "offline", "active", "lag")
    name: str
    current: bool
    offline: bool
    active: int
    lag: int
    _fields = (("name", ""), ("current", False), ("offline", False), ("active", 0), ("lag", 0))


class ClusterInfo(Reply):
    """Where a clustered stream or consumer lives: its leader and replicas."""
    __slots__ = ("name", "raft_group", "leader", "leader_since", "replicas")
    name: str | None
    raft_group: str | None
    leader: str | None
    leader_since: str | None
    replicas: list[PeerInfo]
    _fields = (("name", None), ("raft_group", None), ("leader", None), ("leader_since", None),
               ("replicas", None))
    _convert = {"replicas": _many(PeerInfo)}


class StreamSourceInfo(Reply):
    """A mirror's or a source's state; ``lag`` in messages, ``active`` in ns (-1: never)."""
    __slots__ = ("name", "external", "lag", "active", "filter_subject", "subject_transforms", "error")
    name: str
    external: dict[str, Any] | None
    lag: int
    active: int
    filter_subject: str | None
    subject_transforms: list[dict[str, Any]]
    error: dict[str, Any] | None
    _fields = (("name", ""), ("external", None), ("lag", 0), ("active", 0), ("filter_subject", None),
               ("subject_transforms", None), ("error", None))
    _convert = {"subject_transforms": lambda v: list(v or ())}


class StreamState(Reply):
    """A stream's state: message and byte counts, sequences (times RFC 3339)."""
    __slots__ = ("messages", "bytes", "first_seq", "first_ts", "last_seq", "last_ts", "consumer_count",
                 "deleted", "num_deleted", "num_subjects", "subjects", "lost")
    messages: int
    bytes: int
    first_seq: int
    first_ts: str | None
    last_seq: int
    last_ts: str | None
    consumer_count: int
    deleted: list[int] | None
    num_deleted: int
    num_subjects: int
    subjects: dict[str, int] | None
    lost: dict[str, Any] | None
    _fields = (("messages", 0), ("bytes", 0), ("first_seq", 0), ("first_ts", None), ("last_seq", 0),
               ("last_ts", None), ("consumer_count", 0), ("deleted", None), ("num_deleted", 0),
               ("num_subjects", 0), ("subjects", None), ("lost", None))


class StreamInfo(Reply):
    """STREAM.INFO / CREATE / UPDATE reply; ``config`` is typed (seconds)."""
    __slots__ = ("config", "created", "state", "cluster", "mirror", "sources", "alternates", "ts")
    config: StreamConfig
    created: str | None
    state: StreamState
    cluster: ClusterInfo | None
    mirror: StreamSourceInfo | None
    sources: list[StreamSourceInfo]
    alternates: list[dict[str, Any]]
    ts: str | None
    _fields = (("config", None), ("created", None), ("state", None), ("cluster", None), ("mirror", None),
               ("sources", None), ("alternates", None), ("ts", None))
    _convert = {"config": lambda v: StreamConfig.from_api(v or {}), "state": StreamState,
                "cluster": _opt(ClusterInfo), "mirror": _opt(StreamSourceInfo), "sources": _many(StreamSourceInfo),
                "alternates": lambda v: list(v or ())}

    @property
    def created_at(self) -> datetime.datetime | None:
        return _time(self.created)


class SequenceInfo(Reply):
    """A consumer's position: its own and the stream's sequence (``last_active`` RFC 3339)."""
    __slots__ = ("consumer_seq", "stream_seq", "last_active")
    consumer_seq: int
    stream_seq: int
    last_active: str | None
    _fields = (("consumer_seq", 0), ("stream_seq", 0), ("last_active", None))


class ConsumerInfo(Reply):
    """CONSUMER.INFO / CREATE reply; ``config`` is typed (seconds), ``pause_remaining`` ns."""
    __slots__ = ("stream_name", "name", "created", "config", "delivered", "ack_floor", "num_ack_pending",
                 "num_redelivered", "num_waiting", "num_pending", "cluster", "push_bound", "paused",
                 "pause_remaining", "ts")
    stream_name: str
    name: str
    created: str | None
    config: ConsumerConfig
    delivered: SequenceInfo
    ack_floor: SequenceInfo
    num_ack_pending: int
    num_redelivered: int
    num_waiting: int
    num_pending: int
    cluster: ClusterInfo | None
    push_bound: bool
    paused: bool
    pause_remaining: int | None
    ts: str | None
    _fields = (("stream_name", ""), ("name", ""), ("created", None), ("config", None), ("delivered", None),
               ("ack_floor", None), ("num_ack_pending", 0), ("num_redelivered", 0), ("num_waiting", 0),
               ("num_pending", 0), ("cluster", None), ("push_bound", False), ("paused", False),
               ("pause_remaining", None), ("ts", None))
    _convert = {"config": lambda v: ConsumerConfig.from_api(v or {}), "delivered": SequenceInfo,
                "ack_floor": SequenceInfo, "cluster": _opt(ClusterInfo), "push_bound": bool, "paused": bool}

    @property
    def created_at(self) -> datetime.datetime | None:
        return _time(self.created)


class ConsumerPauseResponse(Reply):
    """CONSUMER.PAUSE reply (pause_consumer, resume_consumer): ``pause_until``
    RFC 3339 (``pause_until_at`` a datetime), ``pause_remaining`` ns."""
    __slots__ = ("paused", "pause_until", "pause_remaining")
    paused: bool
    pause_until: str | None
    pause_remaining: int
    _fields = (("paused", False), ("pause_until", None), ("pause_remaining", 0))
    _convert = {"paused": bool}

    @property
    def pause_until_at(self) -> datetime.datetime | None:
        return _time(self.pause_until)


class ConsumerResetResponse(ConsumerInfo):
    """CONSUMER.RESET reply (reset_consumer, nats-server 2.14): the consumer's
    info and ``reset_seq``, the stream sequence delivery goes on from."""
    __slots__ = ("reset_seq",)
    reset_seq: int
    _fields = ConsumerInfo._fields + (("reset_seq", 0),)  # type: ignore[assignment]  # one field more


class PubAck(Reply):
    """A publish acknowledgement: stream, seq, duplicate, domain, val.  (One per
    JetStream publish: made as cheaply as the dict it is; the attributes
    read the dict when asked.)"""
    __slots__ = ()
    __init__ = dict.__init__  # (no Python-level __init__: the cost of the dict alone)

    @property
    def stream(self) -> str:
        return self.get("stream", "")

    @property
    def seq(self) -> int:
        return self.get("seq", 0)

    @property
    def duplicate(self) -> bool:
        return bool(self.get("duplicate"))

    @property
    def domain(self) -> str | None:
        return self.get("domain")

    @property
    def val(self) -> str | None:
        """A counter's new value (ADR-49), the server's decimal text; None
        for a stream without counters."""
        return self.get("val")


class BatchAck(Reply):
    """The ack of an atomic batch's commit (ADR-50): ``stream``, ``seq`` (the
    stream sequence of the batch's last message; the others precede it),
    ``batch_id``, ``batch_size`` (how many messages were stored), ``domain``."""
    __slots__ = ("stream", "seq", "batch_id", "batch_size", "domain")
    stream: str
    seq: int
    batch_id: str
    batch_size: int
    domain: str | None
    _fields = (("stream", ""), ("seq", 0), ("batch_id", ""), ("batch_size", 0), ("domain", None))


class AccountInfo(Reply):
    """$JS.API.INFO: the account's JetStream usage (bytes, counts) and its limits."""
    __slots__ = ("memory", "storage", "reserved_memory", "reserved_storage", "streams", "consumers", "limits",
                 "domain", "api", "tiers")
    memory: int
    storage: int
    reserved_memory: int
    reserved_storage: int
    streams: int
    consumers: int
    limits: dict[str, Any]
    domain: str | None
    api: dict[str, Any]
    tiers: dict[str, Any] | None
    _fields = (("memory", 0), ("storage", 0), ("reserved_memory", 0), ("reserved_storage", 0), ("streams", 0),
               ("consumers", 0), ("limits", None), ("domain", None), ("api", None), ("tiers", None))
    _convert = {"limits": lambda v: dict(v or {}), "api": lambda v: dict(v or {})}
