"""Typed stream and consumer configs (seconds in this face; the engine's tables check them)."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (typing.Self from 3.11; only type checkers read it)
    from typing_extensions import Self

from tclnats_py.errors import make_error
from tclnats_py.engine.js import config as _cfg


class _ApiConfig:
    """What StreamConfig and ConsumerConfig (dataclasses) share."""
    _spec: tuple = ()
    _names: frozenset = frozenset()
    extra: dict  # a field of each dataclass: wire fields the class does not name

    def to_api(self, *, defaults: bool = True) -> dict:
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
    subjects: list | None = None
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
    mirror: dict | None = None             # stream_source(...)
    sources: list | None = None            # [stream_source(...), ...]
    sealed: bool | None = None
    deny_delete: bool | None = None
    deny_purge: bool | None = None
    allow_rollup_hdrs: bool | None = None
    compression: str | None = None         # none, s2
    first_seq: int | None = None
    subject_transform: dict | None = None  # subject_transform(src, dest)
    republish: dict | None = None          # republish(src, dest)
    allow_direct: bool | None = None
    mirror_direct: bool | None = None
    metadata: dict | None = None
    placement: dict | None = None
    consumer_limits: dict | None = None
    allow_msg_ttl: bool | None = None
    subject_delete_marker_ttl: float | None = None  # seconds
    extra: dict = field(default_factory=dict)

    _spec = _cfg.STREAM_SPEC + _cfg.STREAM_EXTRA_SPEC


@dataclass
class ConsumerConfig(_ApiConfig):
    """add_consumer's options (JsAPI.md), durations in seconds, plus newer fields."""
    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    deliver_policy: str | None = None      # all, last, new, by_start_sequence, by_start_time, last_per_subject
    opt_start_seq: int | None = None
    opt_start_time: str | None = None      # RFC 3339 (or a datetime)
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
    metadata: dict | None = None
    filter_subjects: list | None = None
    backoff: list | None = None            # seconds each
    max_batch: int | None = None
    max_expires: float | None = None
    max_bytes: int | None = None
    pause_until: str | None = None
    extra: dict = field(default_factory=dict)

    _spec = _cfg.CONSUMER_SPEC + _cfg.CONSUMER_EXTRA_SPEC

    def to_api(self, *, defaults: bool = True) -> dict:
        out = super().to_api(defaults=defaults)
        if self.deliver_policy is None:
            # a start position implies its policy (the table's default is "all")
            if self.opt_start_seq is not None:
                out["deliver_policy"] = "by_start_sequence"
            elif self.opt_start_time is not None:
                out["deliver_policy"] = "by_start_time"
        return out


StreamConfig._names = frozenset(f.name for f in fields(StreamConfig)) - {"extra"}
ConsumerConfig._names = frozenset(f.name for f in fields(ConsumerConfig)) - {"extra"}


def _merge(cls, config, kw):
    """A typed config from a typed one or a wire-JSON dict, keywords applied."""
    if config is None:
        config = cls()
    elif isinstance(config, dict):
        config = cls.from_api(config)
    return config.replace(**kw) if kw else config
