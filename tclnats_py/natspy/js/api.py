"""``nats.js.api``: the JetStream API's dataclasses, as nats-py 2.x names them.

Each class reads a server reply with ``from_response(dict)`` (unknown keys
are dropped, durations arrive in nanoseconds and become float seconds, RFC
3339 times become UTC datetimes, nested objects become their classes) and
writes the request form with ``as_dict()`` (None fields left out, seconds
back to integer nanoseconds, datetimes to RFC 3339 with ``Z``).

The conversions are declared per class rather than coded per class:

* ``_nested``   field -> class (a list of dicts becomes a list of that class)
* ``_seconds``  fields carried as nanoseconds on the wire
* ``_always_ns`` of those, the ones always sent (0 for None: Go servers refuse null)
* ``_times``    fields carried as RFC 3339 strings on the wire
"""

from __future__ import annotations

import datetime
import re
import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from tclnats_py.engine.js import publish as _pub
from tclnats_py.engine.js import meta as _meta
from tclnats_py.engine.js.counter import INCR as _INCR
from tclnats_py.engine.js.api import DEFAULT_API_PREFIX

__all__ = [
    "Header", "StatusCode", "DEFAULT_PREFIX", "INBOX_PREFIX", "Base", "PubAck", "Placement", "ExternalStream",
    "External", "StreamSource", "StreamSourceInfo", "LostStreamData", "StreamState", "RetentionPolicy",
    "StorageType", "DiscardPolicy", "StoreCompression", "PersistMode", "RePublish", "SubjectTransform",
    "StreamConsumerLimits", "StreamConfig", "PeerInfo", "ClusterInfo", "StreamInfo", "StreamsListIterator",
    "AckPolicy", "DeliverPolicy", "ReplayPolicy", "ConsumerConfig", "SequenceInfo", "ConsumerInfo",
    "ConsumerPause", "ConsumerReset", "StreamConsumerSource", "SCHEDULE_YEARLY", "SCHEDULE_MONTHLY",
    "SCHEDULE_WEEKLY", "SCHEDULE_DAILY", "SCHEDULE_HOURLY", "AccountLimits", "Tier", "APIStats", "AccountInfo",
    "RawStreamMsg", "KeyValueConfig",
    "StreamPurgeRequest", "ObjectStoreConfig", "ObjectLink", "ObjectMetaOptions", "ObjectMeta", "ObjectInfo",
]

NS_PER_S = 1_000_000_000


class Header(str, Enum):
    """Header names JetStream reads or writes (the publish expectations are
    the engine's names, ``engine.js.publish``)."""
    BATCH_COMMIT = _pub.BATCH_COMMIT
    BATCH_ID = _pub.BATCH_ID
    BATCH_SEQUENCE = _pub.BATCH_SEQUENCE
    CONSUMER_STALLED = _meta.CONSUMER_STALLED
    DESCRIPTION = "Description"
    EXPECTED_LAST_MSG_ID = _pub.EXPECTED_LAST_MSG_ID
    EXPECTED_LAST_SEQUENCE = _pub.EXPECTED_LAST_SEQ
    EXPECTED_LAST_SUBJECT_SEQUENCE = _pub.EXPECTED_LAST_SUBJECT_SEQ
    EXPECTED_STREAM = _pub.EXPECTED_STREAM
    INCR = _INCR  # a counter's delta, a decimal integer such as "5" or "-2" (ADR-49)
    LAST_CONSUMER = _meta.LAST_CONSUMER
    LAST_STREAM = _meta.LAST_STREAM
    MSG_ID = _pub.MSG_ID
    MSG_TTL = _pub.MSG_TTL
    ROLLUP = _pub.ROLLUP
    SCHEDULE = _pub.SCHEDULE_HEADERS[""]
    SCHEDULE_NEXT = _pub.SCHEDULE_HEADERS["-Next"]
    SCHEDULE_ROLLUP = _pub.SCHEDULE_HEADERS["-Rollup"]
    SCHEDULE_SOURCE = _pub.SCHEDULE_HEADERS["-Source"]
    SCHEDULE_TARGET = _pub.SCHEDULE_HEADERS["-Target"]
    SCHEDULE_TIME_ZONE = _pub.SCHEDULE_HEADERS["-Time-Zone"]
    SCHEDULE_TTL = _pub.SCHEDULE_HEADERS["-TTL"]
    SCHEDULER = _pub.SCHEDULER
    STATUS = "Status"


# the predefined schedules, values of Header.SCHEDULE (ADR-51)
SCHEDULE_YEARLY = "@yearly"
SCHEDULE_MONTHLY = "@monthly"
SCHEDULE_WEEKLY = "@weekly"
SCHEDULE_DAILY = "@daily"
SCHEDULE_HOURLY = "@hourly"

DEFAULT_PREFIX = DEFAULT_API_PREFIX
INBOX_PREFIX = b"_INBOX."


class StatusCode(str, Enum):
    """Status codes of the messages a consumer's server sends besides stream messages."""
    SERVICE_UNAVAILABLE = "503"
    NO_MESSAGES = "404"
    REQUEST_TIMEOUT = "408"
    CONFLICT = "409"
    CONTROL_MESSAGE = "100"


# ---------------------------------------------------------------- time and duration conversions
_FRACTION = re.compile(r"\.(\d+)")


def parse_time(text: str) -> datetime.datetime:
    """An RFC 3339 time (nanoseconds allowed, any offset) as a UTC datetime (microseconds kept)."""
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    # Python before 3.11 reads at most 6 fraction digits: pad or cut to microseconds
    s = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), s, count=1)
    t = datetime.datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc)


def format_time(value: Any) -> Any:
    """A datetime as RFC 3339 in UTC with ``Z`` (a naive one is taken as UTC); a string passes as is."""
    if not isinstance(value, datetime.datetime):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    value = value.astimezone(datetime.timezone.utc)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def to_ns(seconds: float | None) -> int:
    """Seconds as integer nanoseconds; None as 0 (the servers refuse null durations)."""
    return 0 if seconds is None else int(seconds * NS_PER_S)


def from_ns(ns: Any) -> float | None:
    return None if ns is None else ns / NS_PER_S


# ---------------------------------------------------------------- the base class
# a dataclass's field names (from_response), per class
_FIELD_NAMES: dict[type, frozenset] = {}


@dataclass
class Base:
    """A JetStream API object: ``from_response`` reads the server's JSON,
    ``as_dict`` gives the JSON to send, ``evolve`` a changed copy."""

    _nested: ClassVar[dict[str, Any]] = {}
    _seconds: ClassVar[tuple] = ()
    _always_ns: ClassVar[tuple] = ()
    _times: ClassVar[tuple] = ()

    @classmethod
    def _read_field(cls, name: str, value: Any) -> Any:
        if value is None:
            return None
        sub = cls._nested.get(name)
        if sub is not None:
            if isinstance(value, list):
                return [sub.from_response(v) if isinstance(v, dict) else v for v in value]
            return sub.from_response(value) if isinstance(value, dict) else value
        if name in cls._seconds:
            if isinstance(value, list):
                return [from_ns(v) for v in value]
            return from_ns(value)
        if name in cls._times:
            return parse_time(value) if isinstance(value, str) and value else None
        return value

    @classmethod
    def from_response(cls, resp: dict[str, Any]):
        """The object of a server reply; keys the class does not name are ignored."""
        known = _FIELD_NAMES.get(cls)
        if known is None:
            known = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
        return cls(**{k: cls._read_field(k, v) for k, v in resp.items() if k in known})

    def evolve(self, **params):
        """A copy with ``params`` changed."""
        return dataclasses.replace(self, **params)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form for a request: None fields omitted, nested objects and times converted."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            name = f.name
            v = getattr(self, name)
            if name in self._always_ns:
                v = [to_ns(x) for x in v] if isinstance(v, list) else to_ns(v)
            elif v is None:
                continue
            elif isinstance(v, Base):
                v = v.as_dict()
            elif isinstance(v, list):
                v = [x.as_dict() if isinstance(x, Base) else (to_ns(x) if name in self._seconds else x) for x in v]
            elif isinstance(v, dict) and v and all(isinstance(x, Base) for x in v.values()):
                v = {k: x.as_dict() for k, x in v.items()}
            elif name in self._seconds:
                v = to_ns(v)
            elif name in self._times:
                v = format_time(v)
            out[name] = v
        return out


# ---------------------------------------------------------------- enums
class RetentionPolicy(str, Enum):
    LIMITS = "limits"
    INTEREST = "interest"
    WORK_QUEUE = "workqueue"


class StorageType(str, Enum):
    FILE = "file"
    MEMORY = "memory"


class DiscardPolicy(str, Enum):
    OLD = "old"
    NEW = "new"


class StoreCompression(str, Enum):
    NONE = "none"
    S2 = "s2"


class PersistMode(str, Enum):
    DEFAULT = "default"
    ASYNC = "async"


class AckPolicy(str, Enum):
    NONE = "none"
    ALL = "all"
    EXPLICIT = "explicit"
    # the consumer a stream sources or mirrors a workqueue or interest stream
    # through: the sourcing stream acknowledges by flow control (ADR-60)
    FLOW_CONTROL = "flow_control"


class DeliverPolicy(str, Enum):
    ALL = "all"
    LAST = "last"
    NEW = "new"
    BY_START_SEQUENCE = "by_start_sequence"
    BY_START_TIME = "by_start_time"
    LAST_PER_SUBJECT = "last_per_subject"


class ReplayPolicy(str, Enum):
    INSTANT = "instant"
    ORIGINAL = "original"


# ---------------------------------------------------------------- streams
@dataclass
class PubAck(Base):
    """A stream's acknowledgement of a published message: for the commit of
    an atomic batch also ``batch_id`` and ``batch_size`` (the server's
    ``batch`` and ``count``), on a counter stream ``val``, the counter's new
    value as the server's decimal string (ADR-49)."""
    stream: str
    seq: int
    domain: str | None = None
    duplicate: bool | None = None
    batch_id: str | None = None
    batch_size: int | None = None
    val: str | None = None

    # the server's names of the batch fields (ADR-50)
    _wire: ClassVar[dict[str, str]] = {"batch": "batch_id", "count": "batch_size"}

    @classmethod
    def from_response(cls, resp: dict[str, Any]):
        # (no field needs converting: the reply's values are taken as they are)
        if "batch" in resp or "count" in resp:
            resp = {cls._wire.get(k, k): v for k, v in resp.items()}
        return cls(**{k: v for k, v in resp.items() if k in _PUBACK_FIELDS})

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        for wire, name in self._wire.items():
            if name in out:
                out[wire] = out.pop(name)
        return out


_PUBACK_FIELDS = frozenset(f.name for f in dataclasses.fields(PubAck))


@dataclass
class Placement(Base):
    cluster: str | None = None
    tags: list[str] | None = None


@dataclass
class ExternalStream(Base):
    """Where a source or mirror lives in another domain or account: its API prefix."""
    api: str
    deliver: str | None = None


External = ExternalStream


@dataclass
class SubjectTransform(Base):
    src: str
    dest: str


@dataclass
class StreamConsumerSource(Base):
    """The durable push consumer a source or mirror of a workqueue or
    interest stream reads through, made beforehand (ADR-60, server 2.14+):
    its name and deliver subject, both required."""
    name: str
    deliver_subject: str


@dataclass
class StreamSource(Base):
    name: str
    opt_start_seq: int | None = None
    opt_start_time: datetime.datetime | None = None
    filter_subject: str | None = None
    external: ExternalStream | None = None
    subject_transforms: list[SubjectTransform] | None = None
    consumer: StreamConsumerSource | None = None

    _nested = {"external": ExternalStream, "subject_transforms": SubjectTransform, "consumer": StreamConsumerSource}
    _times = ("opt_start_time",)


@dataclass
class StreamSourceInfo(Base):
    name: str
    lag: int | None = None
    active: int | None = None
    error: dict[str, Any] | None = None


@dataclass
class LostStreamData(Base):
    msgs: list[int] | None = None
    bytes: int | None = None


@dataclass
class StreamState(Base):
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumer_count: int
    deleted: list[int] | None = None
    num_deleted: int | None = None
    lost: LostStreamData | None = None
    subjects: dict[str, int] | None = None

    _nested = {"lost": LostStreamData}


@dataclass
class RePublish(Base):
    src: str | None = None
    dest: str | None = None
    headers_only: bool | None = None


@dataclass
class StreamConsumerLimits(Base):
    """Defaults and bounds for the consumers of a stream (server 2.10+)."""
    inactive_threshold: float | None = None  # seconds
    max_ack_pending: int | None = None

    _seconds = ("inactive_threshold",)


@dataclass
class StreamConfig(Base):
    """A stream's configuration; durations in seconds."""
    name: str | None = None
    description: str | None = None
    subjects: list[str] | None = None
    retention: RetentionPolicy | None = None
    max_consumers: int | None = None
    max_msgs: int | None = None
    max_bytes: int | None = None
    discard: DiscardPolicy | None = DiscardPolicy.OLD
    discard_new_per_subject: bool = False
    max_age: float | None = None  # seconds
    max_msgs_per_subject: int = -1
    max_msg_size: int | None = -1
    storage: StorageType | None = None
    num_replicas: int | None = None
    no_ack: bool = False
    template_owner: str | None = None
    duplicate_window: float = 0  # seconds
    placement: Placement | None = None
    mirror: StreamSource | None = None
    sources: list[StreamSource] | None = None
    sealed: bool = False
    deny_delete: bool = False
    deny_purge: bool = False
    allow_rollup_hdrs: bool = False
    first_seq: int | None = None
    republish: RePublish | None = None
    subject_transform: SubjectTransform | None = None
    allow_direct: bool | None = None
    mirror_direct: bool | None = None
    compression: StoreCompression | None = None
    allow_msg_ttl: bool | None = None
    allow_msg_schedules: bool | None = None
    allow_atomic: bool | None = None
    allow_batched: bool | None = None
    allow_msg_counter: bool | None = None  # a counter stream (ADR-49, server 2.12+)
    persist_mode: PersistMode | None = None
    metadata: dict[str, str] | None = None
    consumer_limits: StreamConsumerLimits | None = None
    subject_delete_marker_ttl: float | None = None  # seconds

    _nested = {"placement": Placement, "mirror": StreamSource, "sources": StreamSource, "republish": RePublish,
               "subject_transform": SubjectTransform, "consumer_limits": StreamConsumerLimits}
    _seconds = ("max_age", "duplicate_window", "subject_delete_marker_ttl")
    _always_ns = ("max_age", "duplicate_window")

    def as_dict(self) -> dict[str, Any]:
        if self.compression is not None and self.compression not in ("none", "s2"):
            raise ValueError(f"nats: invalid store compression type: {self.compression}")
        if self.metadata and not isinstance(self.metadata, dict):
            raise ValueError("nats: invalid metadata format")
        out = super().as_dict()
        # the server takes 0 for this one as a value, not as "unset": send it only when positive
        if not (self.subject_delete_marker_ttl and self.subject_delete_marker_ttl > 0):
            out.pop("subject_delete_marker_ttl", None)
        return out


@dataclass
class PeerInfo(Base):
    name: str | None = None
    current: bool | None = None
    offline: bool | None = None
    active: int | None = None
    lag: int | None = None


@dataclass
class ClusterInfo(Base):
    leader: str | None = None
    name: str | None = None
    replicas: list[PeerInfo] | None = None
    raft_group: str | None = None
    leader_since: datetime.datetime | None = None
    traffic_acc: str | None = None

    _nested = {"replicas": PeerInfo}
    _times = ("leader_since",)


@dataclass
class StreamInfo(Base):
    """A stream's configuration and state."""
    config: StreamConfig
    state: StreamState
    mirror: StreamSourceInfo | None = None
    sources: list[StreamSourceInfo] | None = None
    cluster: ClusterInfo | None = None
    did_create: bool | None = None
    created: datetime.datetime | None = None

    _nested = {"config": StreamConfig, "state": StreamState, "mirror": StreamSourceInfo,
               "sources": StreamSourceInfo, "cluster": ClusterInfo}
    _times = ("created",)


class StreamsListIterator:
    """The StreamInfos of one STREAM.LIST page (``offset``, ``total``)."""

    def __init__(self, offset: int, total: int, streams: list[dict[str, Any]]) -> None:
        self.offset = offset
        self.total = total
        self.streams = streams
        self._at = 0

    def __iter__(self) -> StreamsListIterator:
        return self

    def __next__(self) -> StreamInfo:
        if self._at >= len(self.streams):
            raise StopIteration
        self._at += 1
        return StreamInfo.from_response(self.streams[self._at - 1])


# ---------------------------------------------------------------- consumers
@dataclass
class ConsumerConfig(Base):
    """A consumer's configuration; durations in seconds."""
    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    deliver_policy: DeliverPolicy | None = DeliverPolicy.ALL
    opt_start_seq: int | None = None
    opt_start_time: datetime.datetime | None = None
    ack_policy: AckPolicy | None = AckPolicy.EXPLICIT
    ack_wait: float | None = None  # seconds
    max_deliver: int | None = None
    backoff: list[float] | None = None  # seconds each
    filter_subject: str | None = None
    filter_subjects: list[str] | None = None
    replay_policy: ReplayPolicy | None = ReplayPolicy.INSTANT
    rate_limit_bps: int | None = None
    sample_freq: str | None = None
    max_waiting: int | None = None
    max_ack_pending: int | None = None
    flow_control: bool | None = None
    idle_heartbeat: float | None = None  # seconds
    headers_only: bool | None = None
    deliver_subject: str | None = None
    deliver_group: str | None = None
    inactive_threshold: float | None = None  # seconds
    num_replicas: int | None = None
    mem_storage: bool | None = None
    metadata: dict[str, str] | None = None
    pause_until: str | None = None

    _seconds = ("ack_wait", "idle_heartbeat", "inactive_threshold", "backoff")
    _always_ns = ("ack_wait", "idle_heartbeat", "inactive_threshold")
    _times = ("opt_start_time",)


@dataclass
class SequenceInfo(Base):
    consumer_seq: int
    stream_seq: int
    last_active: datetime.datetime | None = None

    _times = ("last_active",)


@dataclass
class ConsumerInfo(Base):
    """A consumer's configuration and delivery state."""
    name: str
    stream_name: str
    config: ConsumerConfig
    created: datetime.datetime
    delivered: SequenceInfo | None = None
    ack_floor: SequenceInfo | None = None
    num_ack_pending: int | None = None
    num_redelivered: int | None = None
    num_waiting: int | None = None
    num_pending: int | None = None
    cluster: ClusterInfo | None = None
    push_bound: bool | None = None
    paused: bool | None = None
    pause_remaining: str | None = None

    _nested = {"delivered": SequenceInfo, "ack_floor": SequenceInfo, "config": ConsumerConfig,
               "cluster": ClusterInfo}
    _times = ("created",)


@dataclass
class ConsumerPause(Base):
    """The reply of a consumer pause or resume (server 2.11+)."""
    paused: bool
    pause_until: str | None = None
    pause_remaining: str | None = None


@dataclass
class ConsumerReset(Base):
    """The reply of a consumer reset (server 2.14+, ADR-60): the consumer's
    info and ``reset_seq``, the stream sequence delivery goes on from."""
    info: ConsumerInfo
    reset_seq: int

    @classmethod
    def from_response(cls, resp: dict[str, Any]):
        rest = dict(resp)
        reset_seq = rest.pop("reset_seq", 0)
        return cls(info=ConsumerInfo.from_response(rest), reset_seq=reset_seq)


# ---------------------------------------------------------------- account
@dataclass
class AccountLimits(Base):
    max_memory: int
    max_storage: int
    max_streams: int
    max_consumers: int
    max_ack_pending: int
    memory_max_stream_bytes: int
    storage_max_stream_bytes: int
    max_bytes_required: bool


@dataclass
class Tier(Base):
    memory: int
    storage: int
    streams: int
    consumers: int
    limits: AccountLimits

    _nested = {"limits": AccountLimits}


@dataclass
class APIStats(Base):
    total: int
    errors: int
    level: int | None = None


@dataclass
class AccountInfo(Base):
    """The account's JetStream usage and limits."""
    memory: int
    storage: int
    streams: int
    consumers: int
    limits: AccountLimits
    api: APIStats
    domain: str | None = None
    tiers: dict[str, Tier] | None = None

    _nested = {"limits": AccountLimits, "api": APIStats}

    @classmethod
    def _read_field(cls, name: str, value: Any) -> Any:
        if name == "tiers":
            return {k: Tier.from_response(v) for k, v in value.items()} if value else None
        return super()._read_field(name, value)


# ---------------------------------------------------------------- messages
@dataclass
class RawStreamMsg(Base):
    """A message read from a stream by sequence or subject (get_msg)."""
    subject: str | None = None
    seq: int | None = None
    data: bytes | None = None
    hdrs: bytes | None = None
    headers: dict | None = None
    stream: str | None = None
    time: datetime.datetime | None = None

    _times = ("time",)

    @property
    def sequence(self) -> int | None:
        return self.seq

    @property
    def header(self) -> dict | None:
        return self.headers


@dataclass
class StreamPurgeRequest(Base):
    seq: int | None = None
    filter: str | None = None
    keep: int | None = None


# ---------------------------------------------------------------- Key-Value and Object Store
@dataclass
class KeyValueConfig(Base):
    """A Key-Value bucket's configuration; ``ttl`` in seconds.  ``limit_marker_ttl``
    (seconds) is read by the client when it creates the bucket, never sent as such."""
    bucket: str
    description: str | None = None
    max_value_size: int | None = None
    history: int = 1
    ttl: float | None = None
    max_bytes: int | None = None
    storage: StorageType | None = None
    replicas: int = 1
    placement: Placement | None = None
    republish: RePublish | None = None
    direct: bool | None = None
    limit_marker_ttl: float | None = None

    _nested = {"placement": Placement, "republish": RePublish}
    _seconds = ("ttl", "limit_marker_ttl")
    _always_ns = ("ttl",)

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        out.pop("limit_marker_ttl", None)
        return out


@dataclass
class ObjectStoreConfig(Base):
    """An object store's configuration; ``ttl`` in seconds."""
    bucket: str | None = None
    description: str | None = None
    ttl: float | None = None
    max_bytes: int | None = None
    storage: StorageType | None = None
    replicas: int = 1
    placement: Placement | None = None

    _nested = {"placement": Placement}
    _seconds = ("ttl",)
    _always_ns = ("ttl",)


@dataclass
class ObjectLink(Base):
    """A link to another object (``name``) or a whole bucket (no name)."""
    bucket: str
    name: str | None = None


@dataclass
class ObjectMetaOptions(Base):
    link: ObjectLink | None = None
    max_chunk_size: int | None = None

    _nested = {"link": ObjectLink}


@dataclass
class ObjectMeta(Base):
    """What a caller says about an object: name, description, headers, options."""
    name: str | None = None
    description: str | None = None
    headers: dict | None = None
    options: ObjectMetaOptions | None = None

    _nested = {"options": ObjectMetaOptions}


@dataclass
class ObjectInfo(Base):
    """An object's meta and what the store knows of it (size, chunks, digest ...)."""
    name: str
    bucket: str
    nuid: str
    size: int | None = None
    mtime: str | None = None
    chunks: int | None = None
    digest: str | None = None
    deleted: bool | None = False
    description: str | None = None
    headers: dict | None = None
    options: ObjectMetaOptions | None = None

    _nested = {"options": ObjectMetaOptions}

    @property
    def meta(self) -> ObjectMeta:
        return ObjectMeta(name=self.name, description=self.description, headers=self.headers, options=self.options)

    def is_link(self) -> bool:
        return getattr(self.options, "link", None) is not None
