"""Stream: one stream's info, messages and consumers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # names used in annotations only
    import datetime
    from typing_extensions import Unpack
    from tclnats_py.engine.js.api import StoredMsg
    from tclnats_py.jsface.config import ConsumerConfig, ConsumerFields, StreamConfig, StreamFields
    from tclnats_py.jsface.info import ConsumerInfo, ConsumerPauseResponse, ConsumerResetResponse, StreamInfo
    from tclnats_py.sync.jetstream.consumer import Consumer
    from tclnats_py.sync.jetstream.context import JetStream
    from tclnats_py.sync.jetstream.ordered import OrderedConsumer


class Stream:
    """A stream (``js.stream(name)``); ``info`` is the last one fetched."""

    def __init__(self, js: JetStream, name: str, info: StreamInfo):
        self.js = js
        self.name = name
        self.info = info

    def __repr__(self) -> str:
        return f"<Stream {self.name}>"

    @property
    def config(self) -> StreamConfig:
        return self.info.config

    def refresh(self) -> StreamInfo:
        """Fetch the stream's info again (``self.info``) and return it."""
        self.info = self.js.stream_info(self.name)
        return self.info

    def update(self, config: StreamConfig | None = None, **kw: Unpack[StreamFields]) -> Stream:
        """Change the stream's config (the fields given); this Stream, updated."""
        self.info = self.js.update_stream(self.name, config or self.config, **kw).info
        return self

    def delete(self) -> bool:
        """Delete the stream and its messages; True."""
        return self.js.delete_stream(self.name)

    def purge(self, filter: str | None = None, keep: int | None = None, seq: int | None = None) -> int:
        """Remove messages: all, those on ``filter``, all but the last ``keep``, or below ``seq``; how many."""
        return self.js.purge_stream(self.name, filter, keep, seq)

    def create_consumer(self, config: ConsumerConfig | dict[str, Any] | None = None,
                        **kw: Unpack[ConsumerFields]) -> Consumer:
        """Create a consumer of this stream; see :meth:`JetStream.create_consumer`."""
        return self.js.create_consumer(self.name, config, **kw)

    def update_consumer(self, config: ConsumerConfig | dict[str, Any] | None = None,
                        **kw: Unpack[ConsumerFields]) -> Consumer:
        """Change a consumer of this stream."""
        return self.js.update_consumer(self.name, config, **kw)

    def create_or_update_consumer(self, config: ConsumerConfig | dict[str, Any] | None = None,
                                  **kw: Unpack[ConsumerFields]) -> Consumer:
        """Create or update a consumer of this stream."""
        return self.js.create_or_update_consumer(self.name, config, **kw)

    def consumer(self, name: str) -> Consumer:
        """The pull consumer ``name`` of this stream; ErrConsumerNotFound."""
        return self.js.consumer(self.name, name)

    def delete_consumer(self, name: str) -> bool:
        """Delete the consumer ``name``; True."""
        return self.js.delete_consumer(self.name, name)

    def pause_consumer(self, name: str, pause_until: datetime.datetime | int | str) -> ConsumerPauseResponse:
        """Pause the consumer ``name`` until ``pause_until``; see JetStream.pause_consumer."""
        return self.js.pause_consumer(self.name, name, pause_until)

    def resume_consumer(self, name: str) -> ConsumerPauseResponse:
        """Resume the consumer ``name`` now; see JetStream.resume_consumer."""
        return self.js.resume_consumer(self.name, name)

    def reset_consumer(self, name: str, seq: int | None = None) -> ConsumerResetResponse:
        """Reset the consumer ``name``; see JetStream.reset_consumer."""
        return self.js.reset_consumer(self.name, name, seq)

    def consumer_names(self) -> list[str]:
        """The names of this stream's consumers."""
        return self.js.consumer_names(self.name)

    def consumers(self) -> list[ConsumerInfo]:
        """The infos of this stream's consumers."""
        return self.js.consumers(self.name)

    def ordered_consumer(self, **kw: Any) -> OrderedConsumer:
        """An ordered consumer of this stream; see :meth:`JetStream.ordered_consumer`."""
        return self.js.ordered_consumer(self.name, **kw)

    def get_msg(self, seq: int | None = None, last_by_subj: str | None = None,
                next_by_subj: str | None = None) -> StoredMsg:
        """A message by sequence or subject; DIRECT.GET when the stream
        allows it, STREAM.MSG.GET otherwise.  ErrMsgNotFound."""
        if (self.info.get("config") or {}).get("allow_direct"):
            return self.js.direct_get(self.name, seq, last_by_subj, next_by_subj)
        return self.js.get_msg(self.name, seq, last_by_subj, next_by_subj)

    def get_last_msg_for_subject(self, subject: str) -> StoredMsg:
        """The last message stored on ``subject``; ErrMsgNotFound."""
        return self.get_msg(last_by_subj=subject)

    def delete_msg(self, seq: int, erase: bool = False) -> bool:
        """Delete message ``seq`` (``erase``: overwrite it too); True."""
        return self.js.delete_msg(self.name, seq, erase)
