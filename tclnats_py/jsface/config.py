"""Typed stream and consumer configs (seconds in this face; the engine's tables check them)."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping, TypedDict

if TYPE_CHECKING:  # (typing.Self from 3.11; only type checkers read it)
    from typing_extensions import Self

from tclnats_py.errors import make_error
from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js.priority import PRIORITY_SPEC, from_wire, to_wire


class _ApiConfig:
    """What StreamConfig and ConsumerConfig (dataclasses) share."""
    _spec: tuple = ()
    _names: frozenset = frozenset()
    extra: dict  # a field of each dataclass: wire fields the class does not name

    def to_api(self, *, defaults: bool = True) -> dict[str, Any]:
        """The wire JSON (ns durations), checked with nats-tcl's rules."""
        opts = {}
        for f in fields(self):  # type: ignore[arg-type]  # the subclasses are dataclasses
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if isinstance(v, datetime.datetime):
                v = v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            opts[f.name] = v
        out = _cfg.build(self._spec, opts, unit="s", strict=False, defaults=defaults)
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out

    def as_dict(self) -> dict[str, Any]:
        """The wire JSON (ns durations): :meth:`to_api`."""
        return self.to_api()

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Self:
        """From the wire; fields this class does not name go to ``extra``."""
        kinds = {name: typ for name, typ, _ in cls._spec}
        kw, extra = {}, {}
        for k, v in (data or {}).items():
            if k in cls._names:
                typ = kinds.get(k)
                if typ == "ns":
                    v = _cfg.from_ns(v, "s")
                elif typ == "ns_list" and isinstance(v, list):
                    v = [_cfg.from_ns(x, "s") for x in v]
                kw[k] = v
            else:
                extra[k] = v
        return cls(**kw, extra=extra)  # type: ignore[call-arg]

    def replace(self, **changes: Any) -> Self:
        bad = set(changes) - self._names
        if bad:
            raise make_error("ErrInvalidArg", f"Unknown option {sorted(bad)[0]}")
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]  # (the subclasses are dataclasses)


@dataclass
class StreamConfig(_ApiConfig):
    """add_stream's options (JsAPI.md), durations in seconds, plus newer fields."""
    name: str | None = None
    description: str | None = None
    subjects: list[str] | None = None
    retention: str | None = None           # limits, interest, workqueue
    max_consumers: int | None = None
    max_msgs: int | None = None
    max_bytes: int | None = None
    discard: str | None = None             # old, new
    max_age: float | None = None           # seconds
    max_msgs_per_subject: int | None = None
    max_msg_size: int | None = None
    storage: str | None = None             # file, memory
    num_replicas: int | None = None
    no_ack: bool | None = None
    duplicate_window: float | None = None  # seconds
    mirror: dict[str, Any] | None = None   # stream_source(...)
    sources: list[dict[str, Any]] | None = None  # [stream_source(...), ...]
    sealed: bool | None = None
    deny_delete: bool | None = None
    deny_purge: bool | None = None
    allow_rollup_hdrs: bool | None = None
    compression: str | None = None         # none, s2
    first_seq: int | None = None
    subject_transform: dict[str, Any] | None = None  # subject_transform(src, dest)
    republish: dict[str, Any] | None = None  # republish(src, dest)
    allow_direct: bool | None = None
    mirror_direct: bool | None = None
    metadata: dict[str, str] | None = None
    placement: dict[str, Any] | None = None
    consumer_limits: dict[str, Any] | None = None
    discard_new_per_subject: bool | None = None
    allow_msg_ttl: bool | None = None               # 2.11, ADR-43
    subject_delete_marker_ttl: float | None = None  # seconds; 2.11, ADR-43
    allow_msg_counter: bool | None = None           # 2.12, ADR-49
    allow_atomic: bool | None = None                # 2.12, ADR-50
    allow_msg_schedules: bool | None = None         # 2.12, ADR-51
    persist_mode: str | None = None                 # default, async; 2.12
    allow_batched: bool | None = None               # 2.14
    extra: dict[str, Any] = field(default_factory=dict)

    _spec = _cfg.STREAM_SPEC + _cfg.STREAM_EXTRA_SPEC


@dataclass
class ConsumerConfig(_ApiConfig):
    """add_consumer's options (JsAPI.md), durations in seconds, plus newer fields."""
    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    deliver_policy: str | None = None      # all, last, new, by_start_sequence, by_start_time, last_per_subject
    opt_start_seq: int | None = None
    opt_start_time: str | datetime.datetime | None = None  # RFC 3339 (or a datetime)
    ack_policy: str | None = None          # explicit (default here), all, none
    ack_wait: float | None = None          # seconds
    max_deliver: int | None = None
    filter_subject: str | None = None
    replay_policy: str | None = None
    rate_limit_bps: int | None = None
    sample_freq: str | None = None
    max_waiting: int | None = None
    max_ack_pending: int | None = None
    flow_control: bool | None = None
    idle_heartbeat: float | None = None
    headers_only: bool | None = None
    deliver_subject: str | None = None
    deliver_group: str | None = None
    inactive_threshold: float | None = None
    num_replicas: int | None = None
    mem_storage: bool | None = None
    metadata: dict[str, str] | None = None
    filter_subjects: list[str] | None = None
    backoff: list[float] | None = None     # seconds each
    max_batch: int | None = None
    max_expires: float | None = None
    max_bytes: int | None = None
    pause_until: str | datetime.datetime | None = None  # RFC 3339 (or a datetime); 2.11
    # priority groups (ADR-42): overflow, pinned_client or prioritized
    priority_policy: str | None = None
    priority_groups: list[str] | None = None
    pinned_ttl: float | None = None        # seconds (the wire's priority_timeout)
    extra: dict[str, Any] = field(default_factory=dict)

    _spec = _cfg.CONSUMER_SPEC + _cfg.CONSUMER_EXTRA_SPEC + PRIORITY_SPEC

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Self:
        return super().from_api(from_wire(data or {}))

    def to_api(self, *, defaults: bool = True) -> dict[str, Any]:
        out = to_wire(super().to_api(defaults=defaults))
        if self.deliver_policy is None:
            # a start position implies its policy (the table's default is "all")
            if self.opt_start_seq is not None:
                out["deliver_policy"] = "by_start_sequence"
            elif self.opt_start_time is not None:
                out["deliver_policy"] = "by_start_time"
        return out


class StreamFields(TypedDict, total=False):
    """The keyword arguments of ``create_stream``/``update_stream`` (and
    ``Stream.update``), for type checkers: :class:`StreamConfig`'s fields but
    ``name`` (the functions' first parameter); seconds for durations."""
    description: str | None
    subjects: list[str] | None
    retention: str | None
    max_consumers: int | None
    max_msgs: int | None
    max_bytes: int | None
    discard: str | None
    max_age: float | None
    max_msgs_per_subject: int | None
    max_msg_size: int | None
    storage: str | None
    num_replicas: int | None
    no_ack: bool | None
    duplicate_window: float | None
    mirror: dict[str, Any] | None
    sources: list[dict[str, Any]] | None
    sealed: bool | None
    deny_delete: bool | None
    deny_purge: bool | None
    allow_rollup_hdrs: bool | None
    compression: str | None
    first_seq: int | None
    subject_transform: dict[str, Any] | None
    republish: dict[str, Any] | None
    allow_direct: bool | None
    mirror_direct: bool | None
    metadata: dict[str, str] | None
    placement: dict[str, Any] | None
    consumer_limits: dict[str, Any] | None
    discard_new_per_subject: bool | None
    allow_msg_ttl: bool | None
    subject_delete_marker_ttl: float | None
    allow_msg_counter: bool | None
    allow_atomic: bool | None
    allow_msg_schedules: bool | None
    persist_mode: str | None
    allow_batched: bool | None


class ConsumerFields(TypedDict, total=False):
    """The keyword arguments of ``create_consumer``/``update_consumer``/
    ``create_or_update_consumer`` (of JetStream and Stream), for type
    checkers: :class:`ConsumerConfig`'s fields; seconds for durations."""
    name: str | None
    durable_name: str | None
    description: str | None
    deliver_policy: str | None
    opt_start_seq: int | None
    opt_start_time: str | datetime.datetime | None
    ack_policy: str | None
    ack_wait: float | None
    max_deliver: int | None
    filter_subject: str | None
    replay_policy: str | None
    rate_limit_bps: int | None
    sample_freq: str | None
    max_waiting: int | None
    max_ack_pending: int | None
    flow_control: bool | None
    idle_heartbeat: float | None
    headers_only: bool | None
    deliver_subject: str | None
    deliver_group: str | None
    inactive_threshold: float | None
    num_replicas: int | None
    mem_storage: bool | None
    metadata: dict[str, str] | None
    filter_subjects: list[str] | None
    backoff: list[float] | None
    max_batch: int | None
    max_expires: float | None
    max_bytes: int | None
    pause_until: str | datetime.datetime | None
    priority_policy: str | None
    priority_groups: list[str] | None
    pinned_ttl: float | None


class KeyValueFields(TypedDict, total=False):
    """The keyword arguments of ``create_key_value``/``update_key_value``
    (and ``create_kv_aggregate``/``create_kv_mirror``), for type checkers:
    ``ttl`` in seconds, ``replicas``, ``compression`` (True: s2)."""
    history: int
    ttl: float | None
    limit_marker_ttl: float | None
    max_value_size: int | None
    max_bucket_size: int | None
    storage: str
    replicas: int | None
    description: str | None
    compression: bool | str | None
    metadata: dict[str, str] | None
    republish: dict[str, Any] | None
    placement: dict[str, Any] | None
    mirror_name: str | None
    mirror_domain: str | None


StreamConfig._names = frozenset(f.name for f in fields(StreamConfig)) - {"extra"}
ConsumerConfig._names = frozenset(f.name for f in fields(ConsumerConfig)) - {"extra"}


def _merge(cls, config, kw):
    """A typed config from a typed one or a wire-JSON dict, keywords applied."""
    if config is None:
        config = cls()
    elif isinstance(config, dict):
        config = cls.from_api(config)
    return config.replace(**kw) if kw else config


def stream_body(name: Any, config: StreamConfig | dict[str, Any] | None, kw: Mapping[str, Any]) -> dict[str, Any]:
    """The wire config of a stream create/update: ``name`` (or a StreamConfig
    in its place), a typed or wire ``config`` and keyword fields over it."""
    if isinstance(name, StreamConfig):
        name, config = name.name, name
    cfg = _merge(StreamConfig, config, kw)
    if name is None:
        name = cfg.name
    return cfg.replace(name=name).to_api()


def consumer_body(config: ConsumerConfig | dict[str, Any] | None, kw: Mapping[str, Any]) -> dict[str, Any]:
    """The wire config of a consumer create/update (typed or wire ``config``, keyword fields over it)."""
    return _merge(ConsumerConfig, config, kw).to_api()
