"""The core commands of a Tcl connection: ``$Py op ...`` from tcl/nats.tcl
and tcl/server_pool.tcl (options, servers, connect, publish, subscribe,
request, ping, destroy).

Each ``c_<op>`` method is one op of the connection's command table
(tclface/commands.py builds it when :class:`TclConnection
<tclnats_py.tclface.connection.TclConnection>` is made): it converts the Tcl
arguments, calls the engine, and runs the effects that call caused.  The
JetStream-facing ops (js_new, service_new) are in js_commands.py.
"""

from __future__ import annotations

from tclnats_py._tclcross import TclError
from tclnats_py.engine.connection import CONNECTED
from tclnats_py.engine.options import OPTION_SPEC, coerce
from tclnats_py.engine.pool import parse_url
from tclnats_py.engine.validate import MAX_TIMEOUT, header_name_error, header_value_error
from tclnats_py.errors import NatsError, make_error
from tclnats_py.tclface.convert import LEVELS, flat, to_bytes
from tclnats_py.tclface.effects import SYNC_DICT, SYNC_PLAIN, ConnectionEffects, Sync
from tclnats_py.tclface.results import Op

__all__ = ["CoreCommands", "MAX_TIMEOUT_MS"]

# the longest timeout an option or a call takes, in ms
MAX_TIMEOUT_MS = int(MAX_TIMEOUT * 1000)


def _int_value(value) -> int | None:
    """An integer as Tcl's ``string is entier -strict`` takes it (decimal,
    0x/0o/0b), or None."""
    if value.__class__ is int:
        return value
    try:
        return coerce("", "int", value) if str(value) == str(value).strip() and str(value) else None
    except NatsError:
        return None


class CoreCommands(ConnectionEffects):
    """The ops of ``$Py`` that nats.tcl and server_pool.tcl call on a connection."""

    # ------------------------------------------------------------ options and servers
    def c_configure(self, *args):
        if len(args) % 2:
            raise make_error("ErrInvalidArg", f"Missing value for option {args[-1]}")
        self._check_config(args)
        typed = {}
        servers = None
        for i in range(0, len(args), 2):
            name = str(args[i]).lstrip("-")
            spec = OPTION_SPEC.get(name)
            if spec is None:
                raise make_error("ErrInvalidArg", f"Unknown option {args[i]}")
            value = args[i + 1]
            typ = spec[0]
            if name == "servers":
                servers = tuple(self.tk.splitlist(value))
                if not servers:
                    raise make_error("ErrInvalidArg", f"Invalid value for the valid_str option servers : {value}")
                continue
            if typ == "valid_str" and value == "":
                raise make_error("ErrInvalidArg", f"Invalid value for the valid_str option {name} : {value}")
            if typ == "pairs":  # a Tcl dict
                value = tuple(self.tk.splitlist(value))
            typed[name] = (coerce(name, typ, value), value)
        o = self.engine.options
        for name, (v, raw) in typed.items():
            setattr(o, name, v)
            shown = ("true" if v else "false") if isinstance(v, bool) else raw
            self.tk.call("set", f"{self.ns}::config({name})", shown)
        self.utf8 = bool(o.utf8_convert)
        if "utf8_convert" in typed or "check_subjects" in typed:
            self.fast_subjects.clear()
            self.tk.call(f"{self.ns}::Fast", "clear")
        if self.utf8:
            # converted payloads: every delivery through the engine
            self._fast("subclear")
        if "pending_msgs_limit" in typed or "pending_bytes_limit" in typed:
            self._fast("limits", *self._fast_limits())
        if "utf8_convert" in typed or "check_subjects" in typed or "write_buf_size" in typed:
            self._fast_path()
        if "custom_reconnect_delay" in typed:
            cb = o.custom_reconnect_delay
            self.engine.reconnect_delay = self._reconnect_delay if cb else None
        if servers is not None:
            self.engine.configure_servers(servers)
            self.tk.call("set", f"{self.ns}::config(servers)", servers)
            self._push_servers()

    def _check_config(self, args) -> None:
        """What configure's option types alone do not say, checked over all
        the pairs before the types are (nats-tcl's messages): a list of
        servers whose every URL parses, timeouts not past the longest, ints
        (counts where -1 means unlimited) not below -1, -tls_opts a dict."""
        for i in range(0, len(args), 2):
            name = str(args[i]).lstrip("-")
            value = args[i + 1]
            if name == "tls_opts":
                if len(self._list_value(name, value, "a dict of tls::import options expected")) % 2:
                    raise make_error("ErrInvalidArg", f"Invalid value for the option tls_opts : {value} (a dict of "
                                     "tls::import options expected)")
                continue
            typ = OPTION_SPEC.get(name, ("",))[0]
            if typ == "list":
                for url in self._list_value(name, value, "a list expected"):
                    parse_url(url)
            elif typ == "timeout" or typ == "int":
                n = _int_value(value)
                if n is None:
                    continue  # the type's check reports it
                if typ == "timeout" and n > MAX_TIMEOUT_MS:
                    raise make_error("ErrBadTimeout", f"Invalid value for the timeout option {name} : {value}")
                if typ == "int" and n < -1:
                    raise make_error("ErrInvalidArg", f"Invalid value for the option {name} : {value} "
                                     "(-1 means unlimited)")

    def _list_value(self, name, value, expected) -> tuple:
        """``value`` as a Tcl list, or ErrInvalidArg naming the option."""
        try:
            return tuple(self.tk.splitlist(value))
        except TclError:
            raise make_error("ErrInvalidArg", f"Invalid value for the option {name} : {value} ({expected})") from None

    def _reconnect_delay(self, server: dict):
        cb = self.engine.options.custom_reconnect_delay
        return int(self.tk.call(*self.tk.splitlist(cb), tuple(flat(server))))

    def c_reset(self, name):
        self.engine.options.reset(name)
        if name == "servers":
            self.engine.pool.clear()
            self._push_servers()
        if name == "custom_reconnect_delay":
            self.engine.reconnect_delay = None
        if name == "utf8_convert":
            self.utf8 = False
        if name in ("utf8_convert", "write_buf_size"):
            self._fast_path()
        if name in ("pending_msgs_limit", "pending_bytes_limit"):
            self._fast("limits", *self._fast_limits())

    def c_servers_written(self, *_trace):
        """The Tcl user (or a test) changed the Servers list: take it back."""
        if self.writing_servers:
            return
        value = self.tk.call("set", self.pool_var)
        pool = self.engine.pool
        by_key = {(s.host, int(s.port)): s for s in pool.servers}
        new = []
        for item in self.tk.splitlist(value):
            d = dict(zip(*[iter(self.tk.splitlist(item))] * 2))
            try:
                key = (d["host"], int(d["port"]))
            except (KeyError, ValueError):
                continue
            s = by_key.get(key)
            if s is None:
                s = parse_url(f"{d.get('scheme', 'nats')}://{d['host']}:{d['port']}")
            s.reconnects = int(d.get("reconnects", s.reconnects))
            s.last_attempt = int(d.get("last_attempt", s.last_attempt))
            new.append(s)
        pool.servers = new

    def c_credentials(self):
        o = self.engine.options
        creds = self.engine.pool.credentials(o.user, o.password, o.token)
        if creds is None:
            raise make_error("ErrAuthorization",
                             f"No credentials known for NATS server at {self.engine.host_port()}")
        return tuple(flat(creds))

    def c_pool_var(self, name):
        self.pool_var = name
        self._push_servers()

    def c_add_server(self, url):
        if self.engine.pool.add_discovered(url) is not None:
            self._log("debug", f"Added {url} to the server pool")
        self._push_servers()

    def c_all_servers(self):
        return tuple(tuple(flat(s.as_dict())) for s in self.engine.pool.servers)

    def c_current_server(self):
        s = self.engine.pool.current
        if s is None:
            return ()
        return (s.host, s.port, s.scheme)

    # ------------------------------------------------------------ connect
    def c_connect(self):
        self.engine.connect()
        self.run()

    def c_disconnect(self):
        self.engine.disconnect()
        self.run()
        self.cancel_all_timers()

    # ------------------------------------------------------------ publish
    def c_publish(self, subject, payload, reply, header, check_subj):
        eng = self.engine
        if self.utf8:
            data = payload.encode("utf-8") if isinstance(payload, str) else payload
        else:
            data = to_bytes(payload)
        headers = self._headers_from_tcl(header) if header else None
        checked = check_subj not in ("0", "false", 0)
        if eng.status == CONNECTED and (eng.pending_bytes or self.chan_pending) and \
                eng.write_pressure(self.chan_pending) and not self.c_room():
            return 0  # nothing accepted: Tcl waits for Room (MakeRoom) and calls again
        eng.publish(subject, data, reply or None, headers, checked)
        if checked and not self.utf8:
            # later publishes to this subject can be queued in Tcl (see nats.tcl)
            fast = self.fast_subjects
            if len(fast) > 4096:
                fast.clear()
                self.tk.call(f"{self.ns}::Fast", "clear")
            for subj in (subject, reply):
                if subj and subj not in fast and not subj.startswith("_INBOX."):
                    fast.add(subj)
                    self.tk.call(f"{self.ns}::Fast", "subject", subj)
        if eng.has_effects:
            self.run()
        return 1

    def c_pending(self):
        """Tcl has queued publishes (fast path): make sure a flush follows."""
        self.tcl_pending = True
        if self.engine.status == CONNECTED and not self.flush_id:
            # as on_flush (inline: once per publishing turn of a responder):
            # written at the end of a readable handler whose callbacks
            # published, else posted
            self.bridge.dirty.add(self)
            self.flush_id = self.tk.call("after", 0, self.cmd + "_ev", "flush")
            self.tk.call("set", f"{self.ns}::timers(flush)", self.flush_id)

    def c_room(self):
        """Whether a publish may go on now (1), or must wait (0) until
        ``Room`` is written.  Everything framed in Tcl goes to the engine
        first, and to the socket as far as it takes it."""
        self.drain_tcl_pubs()
        eng = self.engine
        if eng.status != CONNECTED or not self.sock:
            # not connected: the engine's reconnect buffer has the say
            return 1
        if eng.pending_bytes or self.chan_pending:
            self._pump()
            if eng.has_effects:
                self.run()
            if eng.status != CONNECTED:
                return 1
        self._show_room()
        if self.fast_room >= 0:
            return 1
        self.room_wanted = True
        return 0

    def _headers_from_tcl(self, header):
        items = self.tk.splitlist(header)
        if len(items) % 2:
            raise make_error("ErrInvalidArg", "Invalid header")
        out = {}
        for i in range(0, len(items), 2):
            key = str(items[i])
            why = header_name_error(key)
            vals = [str(v) for v in self.tk.splitlist(items[i + 1])]
            for v in vals:
                if why is not None:
                    break
                why = header_value_error(key, v)
            if why is not None:
                raise make_error("ErrInvalidArg", f"Invalid headers: {why}")
            out[key] = vals
        return out

    # ------------------------------------------------------------ subscribe and request
    def c_subscribe(self, subject, queue, max_msgs, callback, dictmsg, post):
        sub = self.engine.subscribe(subject, queue, int(max_msgs),
                                    handler=(callback, dictmsg in ("1", "true", 1, True),
                                             0 if post in ("0", "false", 0, False) else 1))
        self.tk.call("set", f"{self.ns}::subscriptions({sub.sid})",
                     ("subj", subject, "queue", queue, "callback", callback,
                      "maxMsgs", int(max_msgs), "isDictMsg", dictmsg, "post", post))
        self._fast_sub(sub)
        self.run()
        return sub.sid

    def c_unsubscribe(self, sid, max_msgs):
        try:
            sid_i = int(sid)
        except ValueError:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {sid}") from None
        if sid_i in self.engine.subs:
            # (with max_msgs its messages are counted by the engine from now on)
            self._fast_unsub(sid_i)
        gone = self.engine.unsubscribe(sid_i, int(max_msgs))
        if gone:
            self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({sid_i})")
        self.run()

    def _note_internal_subs(self, req):
        mux, prefix = self.engine.request_inbox
        if mux is not None and mux is not self.noted_mux:
            self.noted_mux = mux
            self.tk.call("set", f"{self.ns}::requestsInboxPrefix", prefix)
            if not self.tk.call("info", "exists", f"{self.ns}::subscriptions({mux.sid})"):
                self.tk.call("set", f"{self.ns}::subscriptions({mux.sid})",
                             ("subj", mux.subject, "queue", ""))
        if req.sub is not None:
            self.tk.call("set", f"{self.ns}::subscriptions({req.sub.sid})",
                         ("subj", req.sub.subject, "queue", ""))

    def c_request(self, subject, payload, timeout, callback, dictmsg, header, max_msgs, check_subj):
        """Start a request.  Sync ones (empty callback) are waited for in Tcl."""
        if self.utf8:
            data = payload.encode("utf-8") if isinstance(payload, str) else payload
        else:
            data = to_bytes(payload)
        headers = self._headers_from_tcl(header) if header else None
        mm = None if max_msgs == "" else int(max_msgs)
        dm = dictmsg in ("1", "true", 1, True)
        if callback:
            handler = (callback, dm, mm is not None)
        elif mm is None:
            handler = SYNC_DICT if dm else SYNC_PLAIN
        else:
            handler = None  # a synchronous gathering request: results($id) gets the list
        req = self.engine.request(subject, data, int(timeout), headers, mm, handler,
                                  check_subj not in ("0", "false", 0))
        self._note_internal_subs(req)
        if not callback:
            self.run_and_write()
        else:
            self.tk.call("set", f"{self.ns}::requests({req.id})", "pending")
            self.run()
        return req.id

    def c_cancel_request(self, rid):
        try:
            rid_i = int(rid)
        except ValueError:
            raise make_error("ErrInvalidArg", f"Invalid request ID {rid}") from None
        req = self.engine.requests.get(rid_i)
        self.engine.cancel_request(rid_i)
        self.tk.call("unset", "-nocomplain", f"{self.ns}::requests({rid_i})")
        h = req.handler if req is not None else None
        if h is None or h.__class__ is Sync or (isinstance(h, Op) and h.async_done is None):
            # a synchronous call waits for results($id) (a callback cancelled it)
            self.tk.setvar(f"{self.ns}::results({rid_i})",
                           (1, ("NATS", "ErrInvalidArg"), f"Request {rid_i} was cancelled"))
        if req is not None and req.sub is not None:
            self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({req.sub.sid})")
        self.run()

    # ------------------------------------------------------------ the rest
    def c_ping(self, timeout):
        p = self.engine.ping(int(timeout))
        self.run()
        self.flush_now()
        return p.id

    def c_generation(self, api):
        """The nats-tcl API generation this connection serves (tcl/v2 says 2):
        2.x's reconnect wait counts from the last connection too."""
        self.engine.pool.wait_after_connect = str(api) == "2"

    def c_inbox(self):
        return self.engine.new_inbox()

    def c_out_buffer(self, *_trace):
        """Read trace of outBuffer: show the pending protocol commands."""
        chunks = self.engine.pending_commands()
        self.tk.call("set", f"{self.ns}::outBuffer", tuple(chunks))

    def c_check_subject(self, subject, mode):
        eng = self.engine
        return int(eng.check_subject(subject, wildcard=(mode == "wildcard"), queue=(mode == "queue")))

    def c_set_log_level(self, level):
        self.min_level = LEVELS.get(level, 0)

    def c_destroy(self):
        try:
            self.engine.disconnect()
            self.run()
        except Exception as e:
            self._log("warn", f"Error while closing the connection: {e}")
        self.cancel_all_timers()
        self.dead = True
        self.bridge.conns.pop(self.cmd, None)
        self.bridge.dirty.discard(self)
        for name in (self.cmd, self.cmd + "_ev", self.cmd + "_rd", self.cmd + "_rx"):
            try:
                self.tk.deletecommand(name)
            except TclError:
                pass

