"""``nats::object_store`` (ADR-20): one bucket handle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.tclface.commands import tcl_commands
from tclnats_py.tclface.values import tcl_value
from tclnats_py.tclface.js.convert import _OBJ_PUT_OPTIONS, _OBJ_WATCH_OPTIONS
from tclnats_py.tclface.js.kv import Watcher

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.tclface.js.context import JetStream

__all__ = ["ObjectStore"]


@tcl_commands
class ObjectStore:
    """One ``nats::object_store`` bucket handle (ADR-20) over ``_js.objstore``."""

    def __init__(self, js: JetStream, bucket: str):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.bucket = bucket
        self.stream = _obj.stream_name(bucket)
        self.cmd = f"::tclnats::obj{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def c_put(self, name, data, *args):
        o = self.js.args.build(_OBJ_PUT_OPTIONS, args)
        nuid = self.conn.engine.new_inbox().rpartition(".")[2]
        return self.js.run(_obj.put(self.js.api, self.bucket, name, self.conn.payload_bytes(data), nuid,
                                    chunk_size=o["chunk_size"], description=o.get("description")))

    def c_get(self, name):
        return self.js.run(_obj.get(self.js.api, self.bucket, name))

    def c_info(self, name):
        return self.js.run(_obj.info(self.js.api, self.bucket, name))

    def c_list(self):
        return self.js.run(_obj.list_infos(self.js.api, self.bucket), lambda infos: tcl_value(infos))

    def c_delete(self, name):
        return self.js.run(_obj.delete(self.js.api, self.bucket, name), lambda r: "")

    def c_add_link(self, name, target_name):
        def op():
            target = yield from _obj.info(self.js.api, self.bucket, target_name)
            return (yield from _obj.add_link(self.js.api, self.bucket, name, target))
        return self.js.run(op())

    def c_status(self):
        return self.js.run(self.js.api.stream_info(self.stream))

    def c_watch(self, key_pattern, obj, ns, values_array, *args):
        o = self.js.args.build(_OBJ_WATCH_OPTIONS, args)
        state = _ordered.OrderedConsumer(self.stream, **_obj.watch_options(
            self.bucket, include_history=o["include_history"], updates_only=o["updates_only"]))
        w = Watcher(self.js, self.bucket, _obj.Watcher(ignore_deletes=o["ignore_deletes"],
                                                       updates_only=o["updates_only"]),
                    ns, o["callback"], "")
        return (w.cmd, w.start(state))

    def c_destroy(self):
        self.js.js.unregister(self.cmd)
