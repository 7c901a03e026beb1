"""Stream: one stream's info and consumers."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js.direct import DirectBatch
from tclnats_py.aio.jetstream.direct import DirectGet

if TYPE_CHECKING:  # names used in annotations only
    import datetime
    from typing_extensions import Unpack
    from tclnats_py.jsface.config import ConsumerConfig, ConsumerFields, StreamConfig, StreamFields
    from tclnats_py.aio.jetstream.consumer import Consumer
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.jsface.info import ConsumerInfo, ConsumerPauseResponse, ConsumerResetResponse, StreamInfo
    from tclnats_py.aio.jetstream.ordered import OrderedConsumer
    from tclnats_py.engine.js.api import StoredMsg



class Stream:
    """A stream (``await js.stream(name)``); ``info`` is the last one fetched."""

    def __init__(self, js: JetStream, name: str, info: StreamInfo):
        self.js = js
        self.name = name
        self.info = info

    def __repr__(self):
        return f"<Stream {self.name}>"

    @property
    def config(self) -> StreamConfig:
        return self.info.config

    async def refresh(self) -> StreamInfo:
        """Fetch the stream's info again (``self.info``) and return it."""
        self.info = await self.js.stream_info(self.name)
        return self.info

    async def update(self, config: StreamConfig | None = None, **kw: Unpack[StreamFields]) -> "Stream":
        """Change the stream's config (the fields given); the updated Stream."""
        s = await self.js.update_stream(self.name, config or self.config, **kw)
        self.info = s.info
        return self

    async def delete(self) -> bool:
        """Delete the stream and its messages; True."""
        return await self.js.delete_stream(self.name)

    async def purge(self, filter: str | None = None, keep: int | None = None, seq: int | None = None) -> int:
        """Remove messages: all, those on ``filter``, all but the last ``keep``, or below ``seq``; how many."""
        return await self.js.purge_stream(self.name, filter, keep, seq)

    async def create_consumer(self, config: ConsumerConfig | dict[str, Any] | None = None,
                              **kw: Unpack[ConsumerFields]) -> "Consumer":
        """Create a consumer of this stream; see :meth:`JetStream.create_consumer`."""
        return await self.js.create_consumer(self.name, config, **kw)

    async def update_consumer(self, config: ConsumerConfig | dict[str, Any] | None = None,
                              **kw: Unpack[ConsumerFields]) -> "Consumer":
        """Change a consumer of this stream; see :meth:`JetStream.update_consumer`."""
        return await self.js.update_consumer(self.name, config, **kw)

    async def create_or_update_consumer(self, config: ConsumerConfig | dict[str, Any] | None = None,
                                        **kw: Unpack[ConsumerFields]) -> "Consumer":
        """Create or update a consumer of this stream."""
        return await self.js.create_or_update_consumer(self.name, config, **kw)

    async def consumer(self, name: str) -> "Consumer":
        """The pull consumer ``name`` of this stream; ErrConsumerNotFound."""
        return await self.js.consumer(self.name, name)

    async def delete_consumer(self, name: str) -> bool:
        """Delete the consumer ``name``; True."""
        return await self.js.delete_consumer(self.name, name)

    async def pause_consumer(self, name: str, pause_until: datetime.datetime | int | str) -> ConsumerPauseResponse:
        """Pause the consumer ``name`` until ``pause_until``; see JetStream.pause_consumer."""
        return await self.js.pause_consumer(self.name, name, pause_until)

    async def resume_consumer(self, name: str) -> ConsumerPauseResponse:
        """Resume the consumer ``name`` now; see JetStream.resume_consumer."""
        return await self.js.resume_consumer(self.name, name)

    async def reset_consumer(self, name: str, seq: int | None = None) -> ConsumerResetResponse:
        """Reset the consumer ``name``; see JetStream.reset_consumer."""
        return await self.js.reset_consumer(self.name, name, seq)

    async def consumer_names(self) -> list[str]:
        """The names of this stream's consumers."""
        return await self.js.consumer_names(self.name)

    async def consumers(self) -> list[ConsumerInfo]:
        """The infos of this stream's consumers."""
        return await self.js.consumers(self.name)

    def ordered_consumer(self, **kw: Any) -> "OrderedConsumer":
        """An ordered consumer of this stream; see :meth:`JetStream.ordered_consumer`."""
        return self.js.ordered_consumer(self.name, **kw)

    async def get_msg(self, seq: int | None = None, last_by_subj: str | None = None,
                      next_by_subj: str | None = None) -> StoredMsg:
        """A message by sequence or subject; DIRECT.GET when the stream
        allows it (as nats.go's Stream.GetMsg), STREAM.MSG.GET otherwise."""
        cfg = self.info.get("config") or {}
        if cfg.get("allow_direct"):
            return await self.js.direct_get(self.name, seq, last_by_subj, next_by_subj)
        return await self.js.get_msg(self.name, seq, last_by_subj, next_by_subj)

    async def get_last_msg_for_subject(self, subject: str) -> StoredMsg:
        """The last message stored on ``subject``; ErrMsgNotFound."""
        return await self.get_msg(last_by_subj=subject)

    def get_batch(self, max_msgs: int, seq: int | None = None, subject: str | None = None,
                  start_time: datetime.datetime | str | None = None, max_bytes: int | None = None) -> DirectGet:
        """Up to ``max_msgs`` messages from ``seq`` (default 1) or
        ``start_time``, on ``subject`` (wildcards allowed) when given, at most
        ``max_bytes`` in all: ``async for m in stream.get_batch(100, seq=7)``
        (ADR-31; the stream needs ``allow_direct``, nats-server 2.11)."""
        return DirectGet(self.js, DirectBatch(self.name, batch=max_msgs, seq=seq, next_by_subj=subject,
                                              start_time=start_time, max_bytes=max_bytes))

    def get_last_msgs_for(self, subjects: list[str] | str, up_to_seq: int | None = None,
                          up_to_time: datetime.datetime | str | None = None,
                          batch: int | None = None) -> DirectGet:
        """The last message of each subject matching ``subjects`` (wildcards
        allowed), as the stream stood at ``up_to_seq`` or ``up_to_time``
        when given, at most ``batch`` of them: an async iterator in stream
        order (ADR-31 multi_last; ``allow_direct``, nats-server 2.11)."""
        return DirectGet(self.js, DirectBatch(self.name, multi_last=subjects, up_to_seq=up_to_seq,
                                              up_to_time=up_to_time, batch=batch))

    async def delete_msg(self, seq: int, erase: bool = False) -> bool:
        """Delete message ``seq`` (``erase``: overwrite it too); True."""
        return await self.js.delete_msg(self.name, seq, erase)

    async def secure_delete_msg(self, seq: int) -> bool:
        """Delete and overwrite message ``seq``; True."""
        return await self.js.delete_msg(self.name, seq, erase=True)
