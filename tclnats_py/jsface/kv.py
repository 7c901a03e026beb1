"""Key-Value values both Python faces hand out (:class:`KvEntry`, :class:`KvStatus`)
and the conversions of a bucket's options and status, in seconds."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any

from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.validate import check_seconds

__all__ = ["KvEntry", "KvStatus", "entry", "bucket_options", "kv_status", "watch_consumer_options"]


class KvEntry(_kv.Entry):
    """A KV entry; ``created`` is ms since the epoch."""

    __slots__ = ()

    @property
    def created_at(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.created / 1000, datetime.timezone.utc)


def entry(e: _kv.Entry) -> KvEntry:
    """The face's :class:`KvEntry` of the engine's entry."""
    return KvEntry(e.bucket, e.key, e.value, e.revision, e.created, e.operation, e.delta, e.reason)


@dataclass
class KvStatus:
    """KvAPI.md "Bucket status" (ttl in seconds, 0 = forever; limit_marker_ttl
    in seconds, 0 = no limit markers, ADR-48)."""
    bucket: str
    values: int
    history: int
    ttl: float
    bytes: int
    is_compressed: bool
    mirror_name: str | None = None
    mirror_domain: str | None = None
    backing_store: str = "JetStream"
    stream_config: dict[str, Any] = field(default_factory=dict)
    stream_state: dict[str, Any] = field(default_factory=dict)
    limit_marker_ttl: float = 0

    @property
    def metadata(self) -> dict[str, str]:
        return self.stream_config.get("metadata") or {}

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (ttl in seconds; stream_config and stream_state the JSON)."""
        return dataclasses.asdict(self)


def kv_status(st: dict[str, Any]) -> KvStatus:
    """The :class:`KvStatus` of the engine's status dict (``Bucket.status()``'s result: ns)."""
    ttl = st["ttl"] / 1e9 if st["ttl"] and st["ttl"] > 0 else 0
    return KvStatus(st["bucket"], st["values"], st["history"], ttl, st["bytes"], st["is_compressed"],
                    st.get("mirror_name"), st.get("mirror_domain"), stream_config=st["stream_config"],
                    stream_state=st["stream_state"], limit_marker_ttl=st.get("limit_marker_ttl", 0) / 1e9)


def bucket_options(ttl: float | None = None, replicas: int | None = None, compression: bool | str | None = None,
                   limit_marker_ttl: float | None = None, **config: Any) -> dict[str, Any]:
    """A bucket's options in the faces' names and seconds -> the keywords of
    the engine's ``kv.create_bucket`` (ms, ``num_replicas`` ...)."""
    if ttl is not None:
        config["ttl_ms"] = int(round(check_seconds("ttl", ttl) * 1000))
    if limit_marker_ttl is not None:
        config["limit_marker_ttl_ms"] = int(round(check_seconds("limit_marker_ttl", limit_marker_ttl) * 1000))
    if replicas is not None:
        config["num_replicas"] = replicas
    if compression is not None:
        config["compression"] = ("s2" if compression else "none") if isinstance(compression, bool) else compression
    return config


def watch_consumer_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The keywords of ``ordered_consumer`` (seconds) for a watch, from the
    bucket's watch options (``Bucket.watch_options``: ms)."""
    return {"filter_subject": opts.get("filter_subject"), "deliver_policy": opts["deliver_policy"],
            "headers_only": opts["headers_only"], "idle_heartbeat": opts.get("idle_heartbeat_ms", 5000) / 1000,
            "description": opts.get("description"), "filter_subjects": opts.get("filter_subjects")}
