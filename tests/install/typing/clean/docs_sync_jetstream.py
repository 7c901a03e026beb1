"""The Python blocks of docs/sync-jetstream.md (the blocking face's JetStream, KV and Object
Store), each in a function: tests/install/test_typing.py type-checks them (mypy --strict, pyright
strict); tests/docs runs them."""

from __future__ import annotations


def streams_publishing_consumers() -> None:
    import tclnats_py, tclnats_py.sync

    with tclnats_py.sync.connect("nats://localhost:4222") as nc:
        js = nc.jetstream()                                       # domain=, api_prefix=, timeout= (s)
        stream = js.create_stream("ORDERS", subjects=["orders.*"], storage="memory")
        ack = js.publish("orders.new", b"apple", msg_id="o-1")    # PubAck: stream, seq, duplicate
        try:
            js.publish("orders.new", b"pear", expected_last_seq=5)
        except tclnats_py.ErrWrongLastSequence:
            pass
        futures = [js.publish_async("orders.new", b"%d" % i) for i in range(100)]   # concurrent.futures.Future
        js.publish_async_complete(timeout=5)
        assert futures[-1].result().seq == 101

        cons = stream.create_consumer(durable_name="PACKER", ack_wait=30)
        msgs = cons.fetch(3, max_wait=1.0)                        # up to 3, waiting up to 1 s
        for m in msgs:
            m.ack()                                               # nak(delay), in_progress(), term(reason), ack_sync()
        one = cons.next(timeout=1.0)                              # ErrTimeout when none came
        one.ack_sync()
        print("done", len(msgs), one.metadata.sequence.stream - 1)


def consuming_continuously() -> None:
    import threading, tclnats_py.sync
    from tclnats_py.sync.jetstream import JsMsg

    with tclnats_py.sync.connect("nats://localhost:4222") as nc:
        js = nc.jetstream()
        js.create_stream("EVENTS", subjects=["events.*"], storage="memory")
        for i in range(20):
            js.publish("events.new", b"%d" % i)
        cons = js.create_consumer("EVENTS", durable_name="WORKER")

        done = threading.Event()
        seen: list[bytes] = []
        def handle(msg: JsMsg) -> None:                           # runs on the consume thread
            seen.append(msg.data)
            msg.ack()
            if len(seen) == 20:
                done.set()
        ctx = cons.consume(handle, max_messages=5, error_cb=print)
        done.wait(5)
        ctx.stop()                                                # from any thread; waits for the thread to end

        for i in range(5):
            js.publish("events.new", b"later %d" % i)
        later: list[bytes] = []
        with cons.messages() as it:                               # the same algorithm, read here
            for msg in it:
                msg.ack()
                later.append(msg.data)
                if len(later) == 5:
                    break
        print("consumed", len(seen), "then", len(later))


def key_value() -> None:
    import tclnats_py, tclnats_py.sync

    with tclnats_py.sync.connect("nats://localhost:4222") as nc:
        js = nc.jetstream()
        kv = js.create_key_value("SETTINGS", history=5, storage="memory")
        rev = kv.put("theme", b"dark")
        assert kv.get("theme").value == b"dark"                   # KvEntry: key value revision operation created
        kv.update("theme", b"light", last=rev)                    # ErrWrongLastSequence if someone was first
        try:
            kv.create("theme", b"x")                              # only if absent
        except tclnats_py.ErrKeyExists:
            pass
        print(kv.keys(), [e.value for e in kv.history("theme")], kv.status().values)
        with kv.watch("theme") as w:                              # current values, None, then the changes
            for entry in w:
                if entry is None:                                 # the end of the initial values
                    break
                print("watched", entry.key, entry.value)


def object_store() -> None:
    import io, tclnats_py.sync

    with tclnats_py.sync.connect("nats://localhost:4222") as nc:
        js = nc.jetstream()
        obs = js.create_object_store("FILES", storage="memory")
        info = obs.put("greeting", io.BytesIO(b"hello, files"))   # bytes, str, a file object, an iterable of parts
        obs.put("big", b"x" * 1_000_000)                          # chunked, the acks in flight together
        print(info.size, obs.get_bytes("greeting"))               # the digest is checked
        for chunk in obs.get("big"):                              # streamed chunk by chunk
            pass
        names = [i.name for i in obs.list()]
        obs.delete("big")
