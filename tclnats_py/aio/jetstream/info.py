"""Replies of the JetStream API as dicts that also read as attributes."""

from __future__ import annotations

import datetime

from tclnats_py.aio.jetstream.config import ConsumerConfig, StreamConfig


class Info(dict):
    """A JSON reply: a dict that also reads as attributes (``info.state.messages``)."""

    def __getattr__(self, name):
        try:
            v = self[name]
        except KeyError:
            raise AttributeError(name) from None
        return Info(v) if isinstance(v, dict) and not isinstance(v, Info) else v

    def __dir__(self):
        return list(super().__dir__()) + [k for k in self if isinstance(k, str)]


def _time(s):
    if not s:
        return None
    from tclnats_py.engine.js.api import iso_to_ms
    return datetime.datetime.fromtimestamp(iso_to_ms(s) / 1000, datetime.timezone.utc)


class StreamInfo(Info):
    """STREAM.INFO / CREATE / UPDATE reply; ``config`` is typed (seconds)."""

    @property
    def config(self) -> "StreamConfig":
        return StreamConfig.from_api(self.get("config") or {})

    @property
    def created_at(self) -> datetime.datetime | None:
        return _time(self.get("created"))


class ConsumerInfo(Info):
    """CONSUMER.INFO / CREATE reply; ``config`` is typed (seconds)."""

    @property
    def config(self) -> "ConsumerConfig":
        return ConsumerConfig.from_api(self.get("config") or {})

    @property
    def created_at(self) -> datetime.datetime | None:
        return _time(self.get("created"))


class PubAck(Info):
    """A publish acknowledgement: stream, seq, duplicate, domain."""

    @property
    def duplicate(self) -> bool:
        return bool(self.get("duplicate"))

    @property
    def domain(self):
        return self.get("domain")
