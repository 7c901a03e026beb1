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
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any, ClassVar, Dict, Iterator, List, Optional

from tclnats_py.engine.js.api import DEFAULT_API_PREFIX

__all__ = [
    "Header", "StatusCode", "DEFAULT_PREFIX", "INBOX_PREFIX", "Base", "PubAck", "Placement", "ExternalStream",
    "External", "StreamSource", "StreamSourceInfo", "LostStreamData", "StreamState", "RetentionPolicy",
    "StorageType", "DiscardPolicy", "StoreCompression", "PersistMode", "RePublish", "SubjectTransform",
    "StreamConsumerLimits", "StreamConfig", "PeerInfo", "ClusterInfo", "StreamInfo", "StreamsListIterator",
    "AckPolicy", "DeliverPolicy", "ReplayPolicy", "ConsumerConfig", "SequenceInfo", "ConsumerInfo",
    "ConsumerPause", "AccountLimits", "Tier", "APIStats", "AccountInfo", "RawStreamMsg", "KeyValueConfig",
    "StreamPurgeRequest", "ObjectStoreConfig", "ObjectLink", "ObjectMetaOptions", "ObjectMeta", "ObjectInfo",
]

NS_PER_S = 1_000_000_000


class Header(str, Enum):
    """Header names JetStream reads or writes."""
    CONSUMER_STALLED = "Nats-Consumer-Stalled"
    DESCRIPTION = "Description"
    EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
    EXPECTED_LAST_SEQUENCE = "Nats-Expected-Last-Sequence"
    EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"
    EXPECTED_STREAM = "Nats-Expected-Stream"
    LAST_CONSUMER = "Nats-Last-Consumer"
    LAST_STREAM = "Nats-Last-Stream"
    MSG_ID = "Nats-Msg-Id"
    MSG_TTL = "Nats-TTL"
    ROLLUP = "Nats-Rollup"
    STATUS = "Status"


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


def to_ns(seconds: Optional[float]) -> int:
    """Seconds as integer nanoseconds; None as 0 (the servers refuse null durations)."""
    return 0 if seconds is None else int(seconds * NS_PER_S)


def from_ns(ns: Any) -> Optional[float]:
    return None if ns is None else ns / NS_PER_S


# ---------------------------------------------------------------- the base class
@dataclass
class Base:
    """A JetStream API object: ``from_response`` reads the server's JSON,
    ``as_dict`` gives the JSON to send, ``evolve`` a changed copy."""

    _nested: ClassVar[Dict[str, Any]] = {}
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
    def from_response(cls, resp: Dict[str, Any]):
        """The object of a server reply; keys the class does not name are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: cls._read_field(k, v) for k, v in resp.items() if k in known})

    def evolve(self, **params):
        """A copy with ``params`` changed."""
        return replace(self, **params)

    def as_dict(self) -> Dict[str, Any]:
        """The JSON form for a request: None fields omitted, nested objects and times converted."""
        out: Dict[str, Any] = {}
        for f in fields(self):
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
    """A stream's acknowledgement of a published message."""
    stream: str
    seq: int
    domain: Optional[str] = None
    duplicate: Optional[bool] = None


@dataclass
class Placement(Base):
    cluster: Optional[str] = None
    tags: Optional[List[str]] = None


@dataclass
class ExternalStream(Base):
    """Where a source or mirror lives in another domain or account: its API prefix."""
    api: str
    deliver: Optional[str] = None


External = ExternalStream


@dataclass
class SubjectTransform(Base):
    src: str
    dest: str


@dataclass
class StreamSource(Base):
    name: str
    opt_start_seq: Optional[int] = None
    opt_start_time: Optional[datetime.datetime] = None
    filter_subject: Optional[str] = None
    external: Optional[ExternalStream] = None
    subject_transforms: Optional[List[SubjectTransform]] = None

    _nested = {"external": ExternalStream, "subject_transforms": SubjectTransform}
    _times = ("opt_start_time",)


@dataclass
class StreamSourceInfo(Base):
    name: str
    lag: Optional[int] = None
    active: Optional[int] = None
    error: Optional[Dict[str, Any]] = None


@dataclass
class LostStreamData(Base):
    msgs: Optional[List[int]] = None
    bytes: Optional[int] = None


@dataclass
class StreamState(Base):
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumer_count: int
    deleted: Optional[List[int]] = None
    num_deleted: Optional[int] = None
    lost: Optional[LostStreamData] = None
    subjects: Optional[Dict[str, int]] = None

    _nested = {"lost": LostStreamData}


@dataclass
class RePublish(Base):
    src: Optional[str] = None
    dest: Optional[str] = None
    headers_only: Optional[bool] = None


@dataclass
class StreamConsumerLimits(Base):
    """Defaults and bounds for the consumers of a stream (server 2.10+)."""
    inactive_threshold: Optional[float] = None  # seconds
    max_ack_pending: Optional[int] = None

    _seconds = ("inactive_threshold",)


@dataclass
class StreamConfig(Base):
    """A stream's configuration; durations in seconds."""
    name: Optional[str] = None
    description: Optional[str] = None
    subjects: Optional[List[str]] = None
    retention: Optional[RetentionPolicy] = None
    max_consumers: Optional[int] = None
    max_msgs: Optional[int] = None
    max_bytes: Optional[int] = None
    discard: Optional[DiscardPolicy] = DiscardPolicy.OLD
    discard_new_per_subject: bool = False
    max_age: Optional[float] = None  # seconds
    max_msgs_per_subject: int = -1
    max_msg_size: Optional[int] = -1
    storage: Optional[StorageType] = None
    num_replicas: Optional[int] = None
    no_ack: bool = False
    template_owner: Optional[str] = None
    duplicate_window: float = 0  # seconds
    placement: Optional[Placement] = None
    mirror: Optional[StreamSource] = None
    sources: Optional[List[StreamSource]] = None
    sealed: bool = False
    deny_delete: bool = False
    deny_purge: bool = False
    allow_rollup_hdrs: bool = False
    first_seq: Optional[int] = None
    republish: Optional[RePublish] = None
    subject_transform: Optional[SubjectTransform] = None
    allow_direct: Optional[bool] = None
    mirror_direct: Optional[bool] = None
    compression: Optional[StoreCompression] = None
    allow_msg_ttl: Optional[bool] = None
    allow_msg_schedules: Optional[bool] = None
    allow_atomic: Optional[bool] = None
    allow_batched: Optional[bool] = None
    persist_mode: Optional[PersistMode] = None
    metadata: Optional[Dict[str, str]] = None
    consumer_limits: Optional[StreamConsumerLimits] = None
    subject_delete_marker_ttl: Optional[float] = None  # seconds

    _nested = {"placement": Placement, "mirror": StreamSource, "sources": StreamSource, "republish": RePublish,
               "subject_transform": SubjectTransform, "consumer_limits": StreamConsumerLimits}
    _seconds = ("max_age", "duplicate_window", "subject_delete_marker_ttl")
    _always_ns = ("max_age", "duplicate_window")

    def as_dict(self) -> Dict[str, Any]:
        if self.compression is not None and self.compression not in ("none", "s2"):
            raise ValueError(f"nats: invalid store compression type: {self.compression}")
        if self.metadata is not None and not isinstance(self.metadata, dict):
            raise ValueError("nats: invalid metadata format")
        out = super().as_dict()
        # the server takes 0 for this one as a value, not as "unset": send it only when positive
        if not (self.subject_delete_marker_ttl and self.subject_delete_marker_ttl > 0):
            out.pop("subject_delete_marker_ttl", None)
        return out


@dataclass
class PeerInfo(Base):
    name: Optional[str] = None
    current: Optional[bool] = None
    offline: Optional[bool] = None
    active: Optional[int] = None
    lag: Optional[int] = None


@dataclass
class ClusterInfo(Base):
    leader: Optional[str] = None
    name: Optional[str] = None
    replicas: Optional[List[PeerInfo]] = None
    raft_group: Optional[str] = None
    leader_since: Optional[datetime.datetime] = None
    traffic_acc: Optional[str] = None

    _nested = {"replicas": PeerInfo}
    _times = ("leader_since",)


@dataclass
class StreamInfo(Base):
    """A stream's configuration and state."""
    config: StreamConfig
    state: StreamState
    mirror: Optional[StreamSourceInfo] = None
    sources: Optional[List[StreamSourceInfo]] = None
    cluster: Optional[ClusterInfo] = None
    did_create: Optional[bool] = None
    created: Optional[datetime.datetime] = None

    _nested = {"config": StreamConfig, "state": StreamState, "mirror": StreamSourceInfo,
               "sources": StreamSourceInfo, "cluster": ClusterInfo}
    _times = ("created",)


class StreamsListIterator:
    """The StreamInfos of one STREAM.LIST page (``offset``, ``total``)."""

    def __init__(self, offset: int, total: int, streams: List[Dict[str, Any]]) -> None:
        self.offset = offset
        self.total = total
        self.streams = streams
        self._at = 0

    def __iter__(self) -> Iterator[StreamInfo]:
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
    name: Optional[str] = None
    durable_name: Optional[str] = None
    description: Optional[str] = None
    deliver_policy: Optional[DeliverPolicy] = DeliverPolicy.ALL
    opt_start_seq: Optional[int] = None
    opt_start_time: Optional[datetime.datetime] = None
    ack_policy: Optional[AckPolicy] = AckPolicy.EXPLICIT
    ack_wait: Optional[float] = None  # seconds
    max_deliver: Optional[int] = None
    backoff: Optional[List[float]] = None  # seconds each
    filter_subject: Optional[str] = None
    filter_subjects: Optional[List[str]] = None
    replay_policy: Optional[ReplayPolicy] = ReplayPolicy.INSTANT
    rate_limit_bps: Optional[int] = None
    sample_freq: Optional[str] = None
    max_waiting: Optional[int] = None
    max_ack_pending: Optional[int] = None
    flow_control: Optional[bool] = None
    idle_heartbeat: Optional[float] = None  # seconds
    headers_only: Optional[bool] = None
    deliver_subject: Optional[str] = None
    deliver_group: Optional[str] = None
    inactive_threshold: Optional[float] = None  # seconds
    num_replicas: Optional[int] = None
    mem_storage: Optional[bool] = None
    metadata: Optional[Dict[str, str]] = None
    pause_until: Optional[str] = None

    _seconds = ("ack_wait", "idle_heartbeat", "inactive_threshold", "backoff")
    _always_ns = ("ack_wait", "idle_heartbeat", "inactive_threshold")
    _times = ("opt_start_time",)


@dataclass
class SequenceInfo(Base):
    consumer_seq: int
    stream_seq: int
    last_active: Optional[datetime.datetime] = None

    _times = ("last_active",)


@dataclass
class ConsumerInfo(Base):
    """A consumer's configuration and delivery state."""
    name: str
    stream_name: str
    config: ConsumerConfig
    created: datetime.datetime
    delivered: Optional[SequenceInfo] = None
    ack_floor: Optional[SequenceInfo] = None
    num_ack_pending: Optional[int] = None
    num_redelivered: Optional[int] = None
    num_waiting: Optional[int] = None
    num_pending: Optional[int] = None
    cluster: Optional[ClusterInfo] = None
    push_bound: Optional[bool] = None
    paused: Optional[bool] = None
    pause_remaining: Optional[str] = None

    _nested = {"delivered": SequenceInfo, "ack_floor": SequenceInfo, "config": ConsumerConfig,
               "cluster": ClusterInfo}
    _times = ("created",)


@dataclass
class ConsumerPause(Base):
    """The reply of a consumer pause or resume (server 2.11+)."""
    paused: bool
    pause_until: Optional[str] = None
    pause_remaining: Optional[str] = None


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
    level: Optional[int] = None


@dataclass
class AccountInfo(Base):
    """The account's JetStream usage and limits."""
    memory: int
    storage: int
    streams: int
    consumers: int
    limits: AccountLimits
    api: APIStats
    domain: Optional[str] = None
    tiers: Optional[Dict[str, Tier]] = None

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
    subject: Optional[str] = None
    seq: Optional[int] = None
    data: Optional[bytes] = None
    hdrs: Optional[bytes] = None
    headers: Optional[Dict] = None
    stream: Optional[str] = None
    time: Optional[datetime.datetime] = None

    _times = ("time",)

    @property
    def sequence(self) -> Optional[int]:
        return self.seq

    @property
    def header(self) -> Optional[Dict]:
        return self.headers


@dataclass
class StreamPurgeRequest(Base):
    seq: Optional[int] = None
    filter: Optional[str] = None
    keep: Optional[int] = None


# ---------------------------------------------------------------- Key-Value and Object Store
@dataclass
class KeyValueConfig(Base):
    """A Key-Value bucket's configuration; ``ttl`` in seconds.  ``limit_marker_ttl``
    (seconds) is read by the client when it creates the bucket, never sent as such."""
    bucket: str
    description: Optional[str] = None
    max_value_size: Optional[int] = None
    history: int = 1
    ttl: Optional[float] = None
    max_bytes: Optional[int] = None
    storage: Optional[StorageType] = None
    replicas: int = 1
    placement: Optional[Placement] = None
    republish: Optional[RePublish] = None
    direct: Optional[bool] = None
    limit_marker_ttl: Optional[float] = None

    _nested = {"placement": Placement, "republish": RePublish}
    _seconds = ("ttl", "limit_marker_ttl")
    _always_ns = ("ttl",)

    def as_dict(self) -> Dict[str, Any]:
        out = super().as_dict()
        out.pop("limit_marker_ttl", None)
        return out


@dataclass
class ObjectStoreConfig(Base):
    """An object store's configuration; ``ttl`` in seconds."""
    bucket: Optional[str] = None
    description: Optional[str] = None
    ttl: Optional[float] = None
    max_bytes: Optional[int] = None
    storage: Optional[StorageType] = None
    replicas: int = 1
    placement: Optional[Placement] = None

    _nested = {"placement": Placement}
    _seconds = ("ttl",)
    _always_ns = ("ttl",)


@dataclass
class ObjectLink(Base):
    """A link to another object (``name``) or a whole bucket (no name)."""
    bucket: str
    name: Optional[str] = None


@dataclass
class ObjectMetaOptions(Base):
    link: Optional[ObjectLink] = None
    max_chunk_size: Optional[int] = None

    _nested = {"link": ObjectLink}


@dataclass
class ObjectMeta(Base):
    """What a caller says about an object: name, description, headers, options."""
    name: Optional[str] = None
    description: Optional[str] = None
    headers: Optional[dict] = None
    options: Optional[ObjectMetaOptions] = None

    _nested = {"options": ObjectMetaOptions}


@dataclass
class ObjectInfo(Base):
    """An object's meta and what the store knows of it (size, chunks, digest ...)."""
    name: str
    bucket: str
    nuid: str
    size: Optional[int] = None
    mtime: Optional[str] = None
    chunks: Optional[int] = None
    digest: Optional[str] = None
    deleted: Optional[bool] = False
    description: Optional[str] = None
    headers: Optional[dict] = None
    options: Optional[ObjectMetaOptions] = None

    _nested = {"options": ObjectMetaOptions}

    @property
    def meta(self) -> ObjectMeta:
        return ObjectMeta(name=self.name, description=self.description, headers=self.headers, options=self.options)

    def is_link(self) -> bool:
        return self.options is not None and self.options.link is not None
