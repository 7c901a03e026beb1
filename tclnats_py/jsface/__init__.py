"""What the Python faces of JetStream share (the asyncio face, ``tclnats_py.aio``,
and the blocking one, ``tclnats_py.sync``): plain values and the conversions
between them and the engine's, written once.

``config`` (StreamConfig, ConsumerConfig: seconds here, ns on the wire),
``info`` (the typed replies: StreamInfo, ConsumerInfo, PubAck ...),
``message`` (MsgMetadata of a consumed message, the checks of its acks),
``publish`` (the checks of a publish's arguments), ``kv`` (KvEntry, KvStatus,
a bucket's options) and ``objectstore`` (ObjectInfo, ObjectStoreStatus, what
a put reads).  Nothing here waits, reads a socket or knows an event loop.
"""
