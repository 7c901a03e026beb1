"""Typed stream and consumer configurations for the Python JetStream face.

Durations are seconds (floats) here and nanoseconds on the wire.  Fields a
later server adds are kept in ``extra`` and sent back unchanged, so reading
a config, changing one field and updating the stream never drops anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["StreamConfig", "ConsumerConfig"]

_NS = 1_000_000_000


class _ApiConfig:
    _durations: tuple = ()

    def to_api(self) -> dict:
        out = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if v is None:
                continue
            if f.name in self._durations:
                v = int(v * _NS)
            out[f.name] = v
        out.update(self.extra)
        return out

    @classmethod
    def from_api(cls, data: dict):
        known = {f.name for f in fields(cls)} - {"extra"}
        kw = {}
        extra = {}
        for k, v in (data or {}).items():
            if k in known:
                kw[k] = v / _NS if k in cls._durations and isinstance(v, (int, float)) else v
            else:
                extra[k] = v
        return cls(**kw, extra=extra)


@dataclass
class StreamConfig(_ApiConfig):
    name: str | None = None
    subjects: list | None = None
    description: str | None = None
    retention: str | None = None          # limits, interest, workqueue
    max_consumers: int | None = None
    max_msgs: int | None = None
    max_bytes: int | None = None
    discard: str | None = None            # old, new
    max_age: float | None = None          # seconds
    max_msgs_per_subject: int | None = None
    max_msg_size: int | None = None
    storage: str | None = None            # file, memory
    num_replicas: int | None = None
    duplicate_window: float | None = None  # seconds
    allow_direct: bool | None = None
    allow_rollup_hdrs: bool | None = None
    deny_delete: bool | None = None
    deny_purge: bool | None = None
    mirror: dict | None = None
    sources: list | None = None
    subject_transform: dict | None = None
    republish: dict | None = None
    compression: str | None = None
    metadata: dict | None = None
    extra: dict = field(default_factory=dict)

    _durations = ("max_age", "duplicate_window")


@dataclass
class ConsumerConfig(_ApiConfig):
    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    deliver_policy: str | None = None     # all, last, new, by_start_sequence, by_start_time, last_per_subject
    opt_start_seq: int | None = None
    opt_start_time: str | None = None
    ack_policy: str | None = None         # none, all, explicit
    ack_wait: float | None = None         # seconds
    max_deliver: int | None = None
    filter_subject: str | None = None
    filter_subjects: list | None = None
    replay_policy: str | None = None
    max_waiting: int | None = None
    max_ack_pending: int | None = None
    idle_heartbeat: float | None = None
    flow_control: bool | None = None
    headers_only: bool | None = None
    deliver_subject: str | None = None
    deliver_group: str | None = None
    inactive_threshold: float | None = None
    num_replicas: int | None = None
    mem_storage: bool | None = None
    metadata: dict | None = None
    extra: dict = field(default_factory=dict)

    _durations = ("ack_wait", "idle_heartbeat", "inactive_threshold")
