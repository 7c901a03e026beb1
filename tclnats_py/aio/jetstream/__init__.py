"""JetStream for the asyncio face, modelled on nats.go's ``jetstream`` package.

    js = client.jetstream()                  # or tclnats_py.aio.jetstream.new(client, domain=..., api_prefix=...)
    stream = await js.create_stream("ORDERS", subjects=["orders.*"], max_age=3600)
    ack = await js.publish("orders.new", b"apple", msg_id="o-1", expected_stream="ORDERS")
    fut = await js.publish_async("orders.new", b"pear"); await js.publish_async_complete()
    ack = await js.publish_batch([("orders.1", b"a"), ("orders.2", b"b")])   # atomic (ADR-50): all or none
    cons = await stream.create_consumer(durable_name="PACKER", ack_wait=30)
    for msg in await cons.fetch(10, max_wait=1.0):      # waits up to max_wait (30 s default) for 10
        await msg.ack_sync()
    msgs = await cons.fetch_no_wait(10)                 # what is there now
    ctx = cons.consume(handle, max_messages=500)         # continuous pull; await ctx.stop()
    async for msg in cons.messages(): ...                # the same as an iterator
    async for msg in js.ordered_consumer("ORDERS"): ...  # ADR-17, repairs itself
    sub = await js.push_subscribe("ORDERS", deliver_group="g", flow_control=True, idle_heartbeat=5)  # push
    kv = await js.create_key_value("SETTINGS")           # tclnats_py.aio.kv
    obs = await js.create_object_store("FILES")          # tclnats_py.aio.objectstore

JetStream -> Stream -> Consumer -> JsMsg: a user finds what a thing can do on
the thing.  The protocol work is done by ``tclnats_py.engine.js`` (shared with the
Tcl face); this package only awaits its steps on a :class:`tclnats_py.Client`,
one file per concept: ``context`` (JetStream), ``stream``, ``consumer``,
``pull`` (consume/messages), ``ordered``, ``message`` (JsMsg), ``publish``
(publish_async), ``batch`` (atomic batches), ``config`` (typed configs) and ``info`` (replies).

Units: durations are seconds (floats) in this face (configs, ``expires``,
``nak(delay)``, timeouts), nanoseconds on the wire.  Replies are typed
objects (:class:`StreamInfo`, :class:`ConsumerInfo`, :class:`PubAck` ...:
attributes a type checker knows) that keep every field the server sends
(read-only mapping access to the JSON, ``as_dict()``); ``StreamInfo.config`` /
``ConsumerInfo.config`` are the typed :class:`StreamConfig` /
:class:`ConsumerConfig`, which keep fields they do not name in ``extra``;
``api()`` answers an :class:`Info` (any JSON, a dict read as attributes).  Errors are the shared codes: ErrStreamNotFound,
ErrConsumerNotFound, ErrMsgNotFound, ErrWrongLastSequence, ErrNoResponders,
ErrJetStreamNotEnabled, ErrJSResponse (``details``: code, err_code) ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js.api import StoredMsg  # noqa: F401
from tclnats_py.errors import (ErrBadRequest, ErrConsumerDeleted, ErrConsumerNotActive,  # noqa: F401
                               ErrJetStreamNotEnabled, ErrJetStreamNotEnabledForAccount, ErrNoHeartbeat,
                               ErrNotJSMessage, ErrNotPullConsumer)
from tclnats_py.jsface.info import (AccountInfo, BatchAck, ClusterInfo, ConsumerInfo, Info,  # noqa: F401
                                           PeerInfo, PubAck, Reply, SequenceInfo, StreamInfo, StreamSourceInfo, StreamState,
                                           ConsumerPauseResponse, ConsumerResetResponse)
from tclnats_py.jsface.config import ConsumerConfig, StreamConfig  # noqa: F401
from tclnats_py.aio.jetstream.message import JsMsg, MsgMetadata, SequencePair  # noqa: F401
from tclnats_py.aio.jetstream.context import JetStream  # noqa: F401
from tclnats_py.aio.jetstream.stream import Stream  # noqa: F401
from tclnats_py.aio.jetstream.counter import Counter  # noqa: F401
from tclnats_py.aio.jetstream.batch import BatchPublisher  # noqa: F401
from tclnats_py.aio.jetstream.direct import DirectGet  # noqa: F401
from tclnats_py.aio.jetstream.consumer import Consumer  # noqa: F401
from tclnats_py.aio.jetstream.pull import ConsumeContext, MessagesContext  # noqa: F401
from tclnats_py.aio.jetstream.ordered import OrderedConsumer  # noqa: F401
from tclnats_py.aio.jetstream.push import PushSubscription  # noqa: F401

__all__ = ["new", "JetStream", "Stream", "Counter", "DirectGet", "Consumer", "JsMsg", "MsgMetadata", "SequencePair", "StoredMsg", "Info",
           "Reply", "StreamInfo", "StreamState", "ClusterInfo", "PeerInfo", "StreamSourceInfo", "ConsumerInfo",
           "SequenceInfo", "PubAck", "BatchAck", "BatchPublisher", "ConsumerPauseResponse", "ConsumerResetResponse",
           "AccountInfo", "StreamConfig", "ConsumerConfig", "ConsumeContext", "MessagesContext", "OrderedConsumer",
           "PushSubscription",
           "stream_source", "subject_transform", "republish"]

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import Client

# builders of nested config objects (dicts), as nats-tcl's make_* commands
stream_source = _cfg.make_stream_source
subject_transform = _cfg.make_subject_transform
republish = _cfg.make_republish

# error classes this face raises beyond the core ones (all in tclnats_py.errors)
__all__ += ["ErrJetStreamNotEnabled", "ErrJetStreamNotEnabledForAccount", "ErrNotJSMessage", "ErrConsumerDeleted",
            "ErrNoHeartbeat", "ErrConsumerNotActive", "ErrBadRequest", "ErrNotPullConsumer"]


def new(client: Client, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
        **kw: Any) -> "JetStream":
    """The JetStream context of ``client`` (what ``client.jetstream()`` returns)."""
    return JetStream(client, domain=domain, api_prefix=api_prefix, timeout=timeout, **kw)
