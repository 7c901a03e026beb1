"""``nats::key_value`` (ADR-8) and the watchers of KV and Object Store (``nats::kv_watcher``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.errors import NatsError
from tclnats_py.engine.js.api_level import FEATURES, server_level
from tclnats_py.engine.js.events import InitDone, WatchEntry, WatchInfo, event_table
from tclnats_py.tclface.commands import tcl_commands
from tclnats_py.tclface.values import tcl_value
from tclnats_py.engine.js.publish import ttl_from_ms
from tclnats_py.tclface.js.convert import _KV_GET_OPTIONS, _KV_TTL_OPTIONS, _KV_WATCH_OPTIONS, _int_or_text, _renamed
from tclnats_py.tclface.js.ordered import OrderedConsumer
from tclnats_py.tclface.js.direct import BatchGather

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.tclface.js.context import JetStream

__all__ = ["KeyValue", "Watcher"]


def _flat(d: dict) -> tuple:
    """A Tcl dict of already converted values."""
    return tuple(x for kv in d.items() for x in kv)


def _entry_dict(conn, e: _kv.Entry, with_delta=False):
    """A KV entry as nats-tcl's dict (the value a string with -utf8_convert)."""
    # Entry.as_dict's keys and order, made as the flat list tcl_value would
    # make of it (its values are all scalars: str, bytes, int)
    # (plus ``reason`` for a marker the server placed: ADR-48's limit markers)
    value = e.value.decode("utf-8", "replace") if conn.utf8 else e.value
    if with_delta:
        d: tuple = ("bucket", e.bucket, "key", e.key, "value", value, "revision", e.revision,
                    "created", e.created, "delta", e.delta, "operation", e.operation)
    else:
        d = ("bucket", e.bucket, "key", e.key, "value", value, "revision", e.revision,
             "created", e.created, "operation", e.operation)
    return d if e.reason is None else d + ("reason", e.reason)


@tcl_commands
class KeyValue:
    """One ``nats::key_value`` bucket handle over ``_js.kv.Bucket`` (ADR-8)."""

    def __init__(self, js: JetStream, bucket: _kv.Bucket):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.b = bucket
        self.cmd = f"::tclnats::kv{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def c_put(self, key, value):
        b = self.b

        def result(msg, error):
            if error is not None:
                raise b.put_error(error) from None
            return b.put_result(msg)["seq"]
        return self.js.run_request(b.put_request(key, self.conn.payload_bytes(value)), result)

    def c_update(self, key, value, revision):
        return self.js.run(self.b.update(key, self.conn.payload_bytes(value), _int_or_text(revision)))

    def _ttl(self, args):
        """``-ttl ms`` of create and purge (ADR-48) as a Nats-TTL value, or None."""
        ttl = self.js.args.build(_KV_TTL_OPTIONS, args).get("ttl") if args else None
        return None if ttl is None else ttl_from_ms(ttl)

    def c_create(self, key, value, *args):
        return self.js.run(self.b.create(key, self.conn.payload_bytes(value), self._ttl(args)))

    def c_delete(self, key, revision=""):
        return self.js.run(self.b.delete(key, None if revision == "" else _int_or_text(revision)), lambda r: "")

    def c_purge(self, key, *args):
        return self.js.run(self.b.purge(key, self._ttl(args)), lambda r: "")

    def c_purge_ack(self, key):
        """purge, returning the PubAck of the marker (the Aug 2023 KV API)."""
        return self.js.run(self.b.purge(key))

    def c_get(self, key, *args):
        revision = self.js.args.build(_KV_GET_OPTIONS, args).get("revision") if args else None
        b = self.b
        req = b.get_request(key, revision)
        post = lambda e: _entry_dict(self.conn, e)  # noqa: E731
        if req is None:
            return self.js.run(b.get(key, revision), post)

        def result(msg, error):
            if error is not None:
                raise b.get_error(key, error) from None
            return b.get_result(key, revision, msg)
        return self.js.run_request(req, result, post)

    def c_get_many(self, keys):
        """``$kv get_many keys``: a dict key -> entry of the keys that have a
        value.  Multi-last direct gets (ADR-31, one request per thousand
        keys) on nats-server 2.11 or newer when the bucket allows direct
        gets, else one get per key."""
        keys = [str(k) for k in self.tk.splitlist(keys)]
        batches = self.b.get_many_batches(keys)
        out: dict = {}

        def gets():
            for k in keys:
                try:
                    e = yield from self.b.get(k)
                except NatsError as err:
                    if err.code != "ErrKeyNotFound":
                        raise
                else:
                    out[k] = _entry_dict(self.conn, e)
            return _flat(out)

        def start(level):
            if not batches or level < FEATURES["direct_get_multi_last"][0]:
                return self.js._advance(gets(), lambda r: r, None, None)
            return self._next_batch(batches, out)
        return self.js.run(server_level(self.js.api), start)

    def _next_batch(self, batches: list, out: dict):
        """Chain the gathering request of the first of ``batches``; the
        result, once the last has ended, is ``out`` with their entries."""
        from tclnats_py.tclface.js.context import Chain  # (context imports this module)
        get = batches.pop(0)
        gather = BatchGather(get, lambda m, sid: m)

        def finish(outcome, req):
            for m in gather.finish(outcome, req):
                e = self.b.entry_of_stored(m)
                if e.operation == _kv.PUT:
                    out[e.key] = _entry_dict(self.conn, e)
            return self._next_batch(batches, out) if batches else _flat(out)
        return Chain(self.conn.start_request(get.subject(self.js.api), get.body, self.js.timeout, finish,
                                             max_msgs=gather.max_msgs, gather=gather))

    def c_bucket(self):
        return self.b.bucket

    def c_generation2(self):
        """nats-tcl 2.x's reads (see _kv.Bucket.read_as_2x)."""
        self.b.read_as_2x()

    def c_status(self):
        def post(st):
            st = _kv.status_to_ms(st)
            st["is_compressed"] = int(st["is_compressed"])
            _cfg.learn_stream_fields(st["stream_config"])
            return tcl_value(st)
        # nats-tcl's status throws BucketNotFound (without Err)
        return self.js.run(_renamed(self.b.status(), ("ErrBucketNotFound",), "BucketNotFound",
                                    f"Bucket {self.b.bucket} not found"), post)

    def c_watch(self, key_pattern, obj, ns, values_array, *args):
        o = self.js.args.build(_KV_WATCH_OPTIONS, args)
        opts = self.b.watch_options(key_pattern, include_history=o["include_history"], meta_only=o["meta_only"],
                                    updates_only=o["updates_only"], idle_heartbeat_ms=o.get("idle_heartbeat"))
        state = _ordered.OrderedConsumer(self.b.stream, **opts)
        w = Watcher(self.js, self.b.bucket, self.b.watcher(ignore_deletes=o["ignore_deletes"],
                                                          updates_only=o["updates_only"]),
                    ns, o["callback"], values_array)
        return (w.cmd, w.start(state))

    def c_destroy(self):
        self.js.js.unregister(self.cmd)


@tcl_commands
class Watcher:
    """``nats::kv_watcher`` (also an Object Store's watcher): an ordered
    consumer whose messages a ``_js`` watcher state turns into entries (or
    object infos) and the end of the initial data."""

    def __init__(self, js: JetStream, bucket, state, ns, callback, values_array):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.bucket = bucket
        self.state = state                 # _js.kv.Watcher or _js.objstore.Watcher
        self.ns = ns
        self.callback = callback
        self.array = values_array
        self.init_done = False
        self.gathering = ""
        self.results: list = []
        self.consumer: OrderedConsumer | None = None
        self._dispatch = event_table(self, state.EVENTS)
        self.cmd = f"::tclnats::kvw{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def start(self, ordered: _ordered.OrderedConsumer) -> int:
        """Create the ordered consumer; the Tcl side waits for it."""
        self.consumer = OrderedConsumer(self.js, ordered, self.ns, self._on_msg, False,
                                        on_created=lambda info: self._events(self.state.on_consumer_created(info)))
        # nats-tcl's watch throws BucketNotFound (without Err) for a missing bucket
        rid = self.consumer.start()  # (type checkers: set just above)
        self.conn.map_error(rid, "ErrStreamNotFound", "BucketNotFound", f"Bucket {self.bucket} not found")
        return rid

    def c_init_done(self):
        if self.init_done:
            return
        self.init_done = True
        self.tk.call("set", f"{self.ns}::InitDone", "true")
        if self.callback and not self.gathering:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), ""))

    def _on_msg(self, msg: Msg, meta: dict):
        self._events(self.state.on_msg(msg, meta))

    def _events(self, events):
        on = self._dispatch
        for ev in events:
            on[ev.__class__](ev)

    # -- the engine's events (a KV or an Object Store watcher's)
    def on_init_done(self, ev: InitDone) -> None:
        self.c_init_done()

    def on_watch_info(self, ev: WatchInfo) -> None:
        self._deliver(tcl_value(ev.info))

    def on_watch_entry(self, ev: WatchEntry) -> None:
        e = ev.entry
        if self.gathering == "keys":
            self.results.append(e.key)
            return
        self._deliver(_entry_dict(self.conn, e, True))
        if self.array and not self.gathering:
            if e.operation == _kv.PUT:
                value = e.value.decode("utf-8", "replace") if self.conn.utf8 else e.value
                self.tk.call("set", f"{self.array}({e.key})", value)
            else:
                self.tk.call("unset", "-nocomplain", f"{self.array}({e.key})")

    def _deliver(self, item):
        if self.gathering:
            self.results.append(item)
        elif self.callback:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), item))

    def c_timeout(self):
        return self.js.timeout

    def c_bucket(self):
        return self.bucket

    def c_info(self):
        return self.consumer.info if self.consumer else ()

    def c_gather(self, what):
        self.gathering = what
        self.results = []

    def c_results(self):
        return tuple(self.results)

    def c_on_msg(self, msg):
        self.consumer.c_on_msg(msg)

    def c_missing_hb(self):
        return self.consumer.c_missing_hb()

    def c_reset_begin(self, err_code):
        return self.consumer.c_reset_begin(err_code)

    def c_reset_failed(self, code, text):
        return self.consumer.c_reset_failed(code, text)

    def c_destroy(self):
        if self.consumer is not None:
            self.consumer.c_destroy()
        self.js.js.unregister(self.cmd)
