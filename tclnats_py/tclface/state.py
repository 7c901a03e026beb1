"""What one Tcl connection holds: its engine, its Tcl names, and the state of
its socket, timers, fast paths and deliveries.

:class:`ConnectionState` is the base of the parts that
:class:`~tclnats_py.tclface.connection.TclConnection` combines (io.py,
effects.py, conn_commands.py, js_commands.py): each reads and writes the
attributes set here, and the few helpers here (Tcl variables of the object,
its logger, the server list it shows) serve all of them.
"""

from __future__ import annotations

import itertools

from tclnats_py._tclcross import TclError
from tclnats_py.engine.connection import Engine
from tclnats_py.engine.options import Options
from tclnats_py.tclface.convert import LEVELS, flat, format_exc, now_ms

# (a plain False, no typing import at start: the checkers read it as True)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from tclnats_py.tclface.bridge import _Bridge

__all__ = ["ConnectionState", "TCL_API_VERSION"]

TCL_API_VERSION = "3.2.1"


class ConnectionState:
    """The state of one ``nats::connection`` and the helpers all its parts use."""

    effects: dict   # effect class -> handler, built once (TclConnection.__init__)

    def __init__(self, bridge: _Bridge, obj: str, ns: str, log_level: str):
        self.bridge = bridge
        self.tk = bridge.tk
        self.obj = obj
        self.ns = ns
        self.cmd = f"::tclnats::conn{next(bridge.ids)}"
        self.engine = Engine(Options(), clock=now_ms, lang="Tcl", version=TCL_API_VERSION)
        self.engine.reconnect_delay = None
        # a read's messages for one subscription in one DeliverMany effect
        self.engine.deliver_batches = True
        self.min_level = LEVELS.get(log_level, 0)
        self.sock = ""
        self.flush_id = ""
        self.timers: dict = {}       # key -> (token, after id)
        self.tokens: dict = {}       # token -> key
        self.tok = itertools.count(1)
        self.deadlines: dict = {}    # Request/Ping -> its token in deadline_keys
        self.deadline_keys: dict = {}  # token -> (Request/Ping, monotonic deadline)
        self.deadline_heap: list = []  # (deadline, token): no reference to the Request
        self.sweep_id = ""
        self.sweep_at: float | None = None
        self.utf8 = False
        self.writing_servers = False
        self.pool_var = ""
        self.js = None
        self.last_rid = 0
        self.tcl_pending = False
        self.noted_mux = None        # the request inbox subscription Tcl was told of
        self.fast_max = -1
        self.fast_room = -1
        self.fast_subjects: set = set()
        self.tls_pending: tuple | None = None  # (server, tls options) while a TLS handshake runs
        self.chan_pending = 0        # bytes in the socket channel's buffers at the last write
        self.drain_armed = False     # a writable handler (e_drain) is set
        self.room_wanted = False     # a publisher waits for Room (see c_room)
        # the deliveries of the effects being carried out (run), for Tcl
        self.out: list = []
        # slow consumers: deliveries handed to Tcl by a read and not run yet,
        # per subscription ([msgs, bytes]); a callback that waits in the event
        # loop lets the next reads hand over more before its own read's are run
        self.batch: dict | None = None  # {sub: [msgs, bytes]} of the read in progress
        self.batches: list = []      # those of reads whose deliveries are still running
        self.sub_pending: dict = {}  # sub -> [msgs, bytes] of all of them
        self.slow_subs: set = set()  # subscriptions in a slow-consumer episode
        self.limits = (0, 0)
        self.ended_objs: list = []   # Tcl objects to destroy once the effects are done
        self.dead = False

    def _set(self, var, value):
        self.tk.call("set", f"{self.ns}::{var}", value)

    def _log(self, level, text):
        if LEVELS.get(level, 3) < self.min_level or self.dead:
            return
        try:
            self.tk.call(f"{self.ns}::log::{level}", text)
        except TclError:
            pass  # the logger is gone (object being destroyed)

    def _internal_error(self, what, e):
        """An unexpected exception: logged with its traceback, and returned
        to Tcl as ErrInternal (call()'s form)."""
        tb = format_exc()
        self._log("error", f"internal error in {what}: {tb}")
        return (1, ("NATS", "ErrInternal"), f"{type(e).__name__}: {e}")

    def _push_servers(self):
        self.writing_servers = True
        try:
            if not self.pool_var:
                return
            self.tk.call("set", self.pool_var,
                         tuple(tuple(flat(s.as_dict())) for s in self.engine.pool.servers))
        finally:
            self.writing_servers = False
