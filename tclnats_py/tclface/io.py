"""The Tcl connection's I/O: its socket (a Tcl channel), reads, writes, TLS,
timers, and the C state of its fast paths.

As in nats-tcl, I/O stays in Tcl: the socket is a Tcl channel opened with
``socket -async`` (so ``chan push`` transforms see the wire), TLS is
``tls::import``, timers are ``after``.  :class:`ConnectionIO` carries out the
engine's I/O effects (``on_open``, ``on_start_tls``, ``on_close``,
``on_start_timer``, ``on_cancel_timer``, ``on_flush``) with Tcl commands and
turns the readable, writable and timer events of Tcl into engine calls.

The per-message paths are C (tclnats_py/_ext/tclfast.c, the connection's
``Fast`` command): plain publishes are framed in a C buffer that a flush
writes to the socket (:meth:`ConnectionIO.drain_tcl_pubs`); the socket's
readable handler reads in C and calls the callbacks of plain messages
itself, handing every other frame to the engine here (:meth:`ConnectionIO.rx`).
"""

from __future__ import annotations

import heapq
import math
import os
import sys
import time

from tclnats_py._tclcross import TclError
from tclnats_py.credentials import read_credentials
from tclnats_py.engine.connection import CONNECTED
from tclnats_py.engine.effects import CancelTimer, Close, Flush, Open, StartTimer, StartTls
from tclnats_py.errors import NatsError
from tclnats_py.tclface.convert import format_exc, to_bytes
from tclnats_py.tclface.state import ConnectionState
from tclnats_py.tclface.tlsname import check_server_name

__all__ = ["ConnectionIO", "READ_CHUNK", "WRITE_CHUNK", "FAST_BATCH"]

# bytes taken from the socket per readable event: a backlog is worked through
# in batches of this size (each batch parsed, delivered and freed before the
# next), not in one read of everything the kernel holds
READ_CHUNK = 256 * 1024
# bytes handed to the socket channel per write: the engine's queue leaves in
# chunks while the kernel takes them, so no second copy of it waits in Tcl
WRITE_CHUNK = 256 * 1024
# payload bytes the Tcl fast path frames before it asks for room (c_room)
FAST_BATCH = 256 * 1024


class ConnectionIO(ConnectionState):
    """The socket, the timers and the fast paths of one connection."""

    # ------------------------------------------------------------ timers
    # Connection timers ("ping", "connect", "reconnect") are one [after] each.
    # Request and ping deadlines share one [after] set for the earliest of them:
    # a request answered in time costs no Tcl timer call at all, and the sweep
    # skips deadlines that were cancelled since.  The heap holds tokens, not
    # the requests: an answered request is garbage at once, not when its
    # timeout would have passed; cancelled entries are compacted away once
    # they outnumber the live ones.
    def on_start_timer(self, e: StartTimer) -> None:
        key = e.key
        ms = e.ms
        if key.__class__ is not str:
            deadline = time.monotonic() + int(ms) / 1000.0
            tok = next(self.tok)
            old = self.deadlines.get(key)
            if old is not None:
                del self.deadline_keys[old]
            self.deadlines[key] = tok
            self.deadline_keys[tok] = (key, deadline)
            heap = self.deadline_heap
            if len(heap) > 64 and len(heap) > 2 * len(self.deadline_keys):
                keys = self.deadline_keys
                heap[:] = [entry for entry in heap if entry[1] in keys]
                heapq.heapify(heap)
            heapq.heappush(heap, (deadline, tok))
            if self.sweep_at is None or deadline < self.sweep_at:
                self._arm_sweep(deadline)
            return
        old = self.timers.pop(key, None)
        if old is not None:
            self.tokens.pop(old[0], None)
            self.tk.call("after", "cancel", old[1])
        token = str(next(self.tok))
        aid = self.tk.call("after", int(ms), self.cmd + "_ev", "timer", token)
        self.timers[key] = (token, aid)
        self.tokens[token] = key
        if key in ("ping", "connect"):
            self.tk.call("set", f"{self.ns}::timers({key})", aid)

    def on_cancel_timer(self, e: CancelTimer) -> None:
        key = e.key
        if key.__class__ is not str:
            tok = self.deadlines.pop(key, None)
            if tok is not None:
                del self.deadline_keys[tok]
            return
        old = self.timers.pop(key, None)
        if old is not None:
            self.tokens.pop(old[0], None)
            self.tk.call("after", "cancel", old[1])
            if key in ("ping", "connect"):
                self.tk.call("set", f"{self.ns}::timers({key})", "")

    def _arm_sweep(self, deadline):
        if self.sweep_id:
            self.tk.call("after", "cancel", self.sweep_id)
        self.sweep_at = deadline
        wait = max(0, math.ceil((deadline - time.monotonic()) * 1000))
        self.sweep_id = self.tk.call("after", wait, self.cmd + "_ev", "sweep")

    def e_sweep(self):
        self.sweep_id = ""
        self.sweep_at = None
        heap = self.deadline_heap
        keys = self.deadline_keys
        now = time.monotonic()
        expired = []
        while heap:
            deadline, tok = heap[0]
            entry = keys.get(tok)
            if entry is None:
                heapq.heappop(heap)  # cancelled, or started again later
            elif deadline <= now:
                heapq.heappop(heap)
                del keys[tok]
                del self.deadlines[entry[0]]
                expired.append(entry[0])
            else:
                break
        if heap:
            self._arm_sweep(heap[0][0])
        for key in expired:
            self.engine.timer_fired(key)
        self.run()

    def cancel_all_timers(self):
        for key in list(self.timers):
            self.on_cancel_timer(CancelTimer(key))
        self.deadlines.clear()
        self.deadline_keys.clear()
        self.deadline_heap.clear()
        if self.sweep_id:
            self.tk.call("after", "cancel", self.sweep_id)
            self.sweep_id = ""
            self.sweep_at = None
        if self.flush_id:
            self.tk.call("after", "cancel", self.flush_id)
            self.flush_id = ""

    def e_timer(self, tok):
        key = self.tokens.pop(tok, None)
        if key is None:
            return
        self.timers.pop(key, None)
        if key in ("ping", "connect"):
            self.tk.call("set", f"{self.ns}::timers({key})", "")
        self.engine.timer_fired(key)
        self.run()

    # ------------------------------------------------------------ socket
    def on_open(self, e: Open) -> None:
        server = e.server
        self.engine.set_credentials(read_credentials(self.engine.options))
        tk = self.tk
        try:
            sock = tk.call("socket", "-async", *self.engine.open_address(server))
        except TclError as err:
            self.engine.socket_failed(str(err))
            return
        # every write is a whole batch (data_to_send), so no buffering: puts
        # hands it to the socket at once, and what the kernel does not take
        # waits in big channel buffers that drain in few writable events
        tk.call("chan", "configure", sock, "-translation", "binary", "-blocking", 0,
                "-buffering", "none", "-buffersize", 1 << 20)
        tk.call("chan", "event", sock, "writable", (self.cmd + "_ev", "writable"))
        self.sock = sock
        self._set("sock", sock)

    def e_writable(self):
        tk = self.tk
        sock = self.sock
        if not sock:
            return
        tk.call("chan", "event", sock, "writable", "")
        try:
            err = tk.call("chan", "configure", sock, "-error")
        except TclError as e:
            err = str(e)
        if err:
            self.engine.socket_failed(str(err))
        else:
            self._read_with_c(sock)
            self.engine.socket_connected()
        self.run()

    # ------------------------------------------------------------ reads
    def _read_with_c(self, sock):
        """The socket's readable handler is the C reader of the connection
        (``Fast read``, tclfast.c): it reads, calls the callbacks of plain
        messages of the subscriptions registered with it (``Fast sub``), and
        hands every other frame to the engine through :meth:`rx`.  A
        WebSocket's upgrade is HTTP: the Python reader, which hands the bytes
        to the engine whole, until the WebSocket is open (:meth:`_ws_to_c`)."""
        tk = self.tk
        fast = f"{self.ns}::Fast"
        if not self.engine.websocket and self._fast("rd", sock, self.cmd + "_rx", self.cmd + "_rd") is not None:
            handler = (fast, "read")
        else:
            handler = ("::nats::_on_readable", self.cmd + "_rd")   # (no C state: the Python reader)
        tk.call("chan", "event", sock, "readable", handler)
        tk.call("set", f"::tclnats::sockets({sock})", handler)

    def _ws_to_c(self, sock):
        """The WebSocket just opened without an extension: the C reader
        unframes its data frames from the next read on (natscodec.c), from
        where the engine's adapter left off."""
        state = self.engine.ws_hand_over() if sock == self.sock else None
        if state is None or self._fast("rd", sock, self.cmd + "_rx", self.cmd + "_rd") is None:
            return
        max_frame, rest, left, in_msg = state
        self._fast("ws", max_frame, rest, left, int(in_msg))
        handler = (f"{self.ns}::Fast", "read")
        self.tk.call("chan", "event", sock, "readable", handler)
        self.tk.call("set", f"::tclnats::sockets({sock})", handler)

    def rx(self, op, *args):
        """The C reader's calls: ``ops data msgs bytes`` (frames for the
        engine; msgs and bytes: what the C reader received since its last
        report), ``lost reason``, ``eof``, over a WebSocket ``wsctl frame``
        (a control frame) and ``wsbad why`` (a bad frame) (each returns the
        deliveries for Tcl, as :meth:`on_readable`), ``slow sid`` (a
        slow-consumer episode of a subscription of the C reader begins).
        Never raises."""
        try:
            if op == "ops":
                data, msgs, nbytes = args
                if msgs:
                    stats = self.engine.stats
                    stats["in_msgs"] += int(msgs)
                    stats["in_bytes"] += int(nbytes)
                # (over a WebSocket the C reader has unframed them)
                framed = not self.engine.websocket
                return self._feed(lambda: self.engine.receive_data(to_bytes(data), framed))
            if op == "wsctl":
                return self._feed(lambda: self.engine.receive_data(to_bytes(args[0])))
            if op == "wsbad":
                return self._feed(lambda: self.engine.ws_refused(str(args[0])))
            if op == "lost":
                return self._feed(lambda: self.engine.connection_lost(str(args[0]) or None))
            if op == "eof":
                return self._feed(lambda: self.engine.connection_lost(None))
            if op == "slow":
                sub = self.engine.subs.get(int(args[0]))
                if sub is not None:
                    self._report_slow(sub)
                return ()
        except Exception:
            tb = format_exc()
            self._log("error", f"internal error in readable event: {tb}")
            sys.stderr.write(tb)
        return ()

    def _report_slow(self, sub):
        """A slow-consumer episode of ``sub`` begins (the C reader's or
        on_deliver's): an asynchronous error, and a warning in the log."""
        text = (f"Slow consumer on subject {sub.subject} (subscription {sub.sid}): messages dropped past "
                f"-pending_msgs_limit {self.engine.options.pending_msgs_limit} or "
                f"-pending_bytes_limit {self.engine.options.pending_bytes_limit}")
        self.tk.call("set", f"{self.ns}::last_error",
                     ("code", ("NATS", "ErrSlowConsumer"), "errorMessage", text))
        self._log("warn", text)

    def _feed(self, step):
        """Run ``step`` (bytes or an outcome for the engine) as one read of
        :meth:`on_readable`: its effects carried out, its deliveries returned."""
        out = []
        o = self.engine.options
        self.limits = (o.pending_msgs_limit if o.pending_msgs_limit > 0 else sys.maxsize,
                       o.pending_bytes_limit if o.pending_bytes_limit > 0 else sys.maxsize)
        self.batch = batch = {}
        try:
            step()
            self.run(out)
            if out and self.flush_id:
                self.flush_now()  # PONGs and acks go out before user callbacks run
        except Exception:
            tb = format_exc()
            self._log("error", f"internal error in readable event: {tb}")
            sys.stderr.write(tb)
        finally:
            self.batch = None
        if out:
            # the C reader reports (_flush_dirty) when they have run
            self.batches.append(batch)
        return tuple(out)

    def on_readable(self):
        """A readable handler in Python (``::nats::_on_readable``, which the
        C reader replaced): read, feed the engine, carry out its effects, and
        return the deliveries of this read for the Tcl handler to run once
        the library's work is done.  Never raises: an internal error is
        logged."""
        return self._feed(self._read)

    def _read(self):
        tk = self.tk
        sock = self.sock
        if not sock:
            return
        try:
            data = tk.call("read", sock, READ_CHUNK)
        except TclError as e:
            code = ""
            try:
                code = tk.call("set", "::errorCode")
            except TclError:
                pass
            reason = str(e)
            if isinstance(code, (tuple, list)) and len(code) > 1 and code[0] == "POSIX":
                reason = str(code[1])
            self.engine.connection_lost(reason)
            return
        if data:
            self.engine.receive_data(to_bytes(data))
            if self.engine.websocket:
                self._ws_to_c(sock)
        else:
            try:
                eof = tk.call("eof", sock)
            except TclError:
                eof = 1
            if eof:
                self.engine.connection_lost(None)

    # ------------------------------------------------------------ writes
    def on_flush(self, e: Flush) -> None:
        """Bytes wait in the engine: one posted flush writes them (a
        readable handler's callbacks that publish share it: see
        _Bridge._flush_dirty).  Handshake traffic is written by run()."""
        if not self.flush_id and self.engine.status == CONNECTED:
            self.bridge.dirty.add(self)
            self.flush_id = self.tk.call("after", 0, self.cmd + "_ev", "flush")
            self.tk.call("set", f"{self.ns}::timers(flush)", self.flush_id)

    def e_flush(self):
        self.flush_id = ""
        self.bridge.dirty.discard(self)
        if self.tcl_pending:
            self.drain_tcl_pubs()
        self.tk.call("set", f"{self.ns}::timers(flush)", "")
        if self.sock:
            self._pump()
        self.run()

    def flush_now(self):
        """Write what is queued at once: the caller is about to wait for a
        reply, so a posted flush would only cost another event-loop turn."""
        if not self.sock or self.engine.status != CONNECTED:
            return
        if self.flush_id:
            self.tk.call("after", "cancel", self.flush_id)
            self.flush_id = ""
            self.tk.call("set", f"{self.ns}::timers(flush)", "")
        self.bridge.dirty.discard(self)
        # the posted flush would have taken the publishes framed in Tcl too
        if self.tcl_pending:
            self.drain_tcl_pubs()
        self._pump()
        eng = self.engine
        if eng.has_effects or self.ended_objs or eng.status != CONNECTED:
            self.run()

    def run_and_write(self):
        """Carry out the effects and write what is queued in the same call
        (a synchronous caller is about to wait for the reply)."""
        self.run(writing=True)
        self.flush_now()

    def _pump(self):
        """Write the engine's queue in chunks of WRITE_CHUNK bytes while the
        socket takes them.  What the kernel does not take stays in the
        channel's buffers (at most about one chunk): then the rest waits in
        the engine, and the channel's writable event (e_drain) goes on."""
        eng = self.engine
        tk = self.tk
        sock = self.sock
        try:
            if self.chan_pending:
                # a non-blocking flush hands the kernel what it takes now,
                # also in a loop that does not enter the event loop
                self.chan_pending = tk.chan_flush(sock)
            while not self.chan_pending and eng.want_write:
                # puts -nonewline, then chan pending output (one C call)
                self.chan_pending = tk.chan_write(sock, eng.data_to_send(WRITE_CHUNK))
        except TclError as e:
            eng.write_failed(str(e))
            return
        if self.chan_pending and not self.drain_armed:
            # also with nothing more to write: e_drain measures the channel
            # again and wakes publishers waiting for room
            self.drain_armed = True
            tk.call("chan", "event", sock, "writable", (self.cmd + "_ev", "drain"))
        if self.chan_pending or self.fast_room < 0:
            self._show_room()

    def e_drain(self):
        """The socket takes data again: write on, and wake publishers that
        wait for room."""
        self.drain_armed = False
        sock = self.sock
        if not sock:
            return
        self.tk.call("chan", "event", sock, "writable", "")
        if self.tcl_pending:
            self.drain_tcl_pubs()
        if self.engine.status == CONNECTED:
            self._pump()
        self.run()
        self._wake_room()

    def _buffered(self) -> int:
        """Bytes on the way to the socket besides the engine's queue: those in
        the channel's buffers (the Tcl fast path's batch goes to the engine
        before anybody asks, see c_room)."""
        return self.chan_pending

    def _wake_room(self):
        """Publishers wait (MakeRoom in nats.tcl) until the way to the socket
        is below half of write_buf_size, or the connection is not up."""
        if not self.room_wanted:
            return
        eng = self.engine
        if eng.status == CONNECTED and self.sock and \
                eng.pending_bytes + self._buffered() >= eng.options.write_buf_size // 2:
            return
        self.room_wanted = False
        self.tk.call("set", f"{self.ns}::Room", 1)

    def _write(self, data: bytes):
        try:
            self.tk.chan_write(self.sock, data)
        except TclError as e:
            self.engine.write_failed(str(e))

    # ------------------------------------------------------------ close
    def on_close(self, e: Close) -> None:
        """Close the socket without waiting: what the engine still has (a
        disconnect's last publishes) is handed to the non-blocking channel,
        and Tcl finishes writing it in the background after ``close``; a
        peer that does not read can delay nothing here."""
        tk = self.tk
        sock = self.sock
        if self.flush_id:
            tk.call("after", "cancel", self.flush_id)
            self.flush_id = ""
            tk.call("set", f"{self.ns}::timers(flush)", "")
        self.tls_pending = None
        self.drain_armed = False
        self.chan_pending = 0
        if not sock:
            return
        self.sock = ""
        self._fast("rd", "", self.cmd + "_rx", self.cmd + "_rd")
        data = self.engine.data_to_send()
        try:
            tk.call("unset", "-nocomplain", f"::tclnats::sockets({sock})")
            tk.call("chan", "event", sock, "readable", "")
            tk.call("chan", "event", sock, "writable", "")
            if data:
                tk.call("puts", "-nonewline", sock, data)
        except TclError as err:
            # the peer is gone: what was left for it is lost with it
            self._log("debug", f"Last {len(data)} bytes not written to the closed socket: {err}")
        try:
            tk.call("close", sock)
        except TclError as err:
            self._log("warn", f"Failed to close the socket: {err}")
        self._set("sock", "")
        self._wake_room()

    # ------------------------------------------------------------ TLS
    def on_start_tls(self, e: StartTls) -> None:
        """Start the TLS handshake on the non-blocking socket; readable
        events drive it on (e_tls_step), so the event loop, the connect
        timer among its timers, keeps running while a server takes its time."""
        server = e.server
        tk = self.tk
        sock = self.sock
        try:
            tk.call("package", "require", "tls")
        except TclError:
            self.engine.tls_failed("TLS package is not available")
            return
        opts = tk.call("set", f"{self.ns}::config(tls_opts)")
        try:
            merged = tk.call("dict", "merge", ("-require", 1, "-command", "::nats::tls_callback"), opts)
            # no NATS reads while TLS owns the socket (the readable handler and ::tclnats::_await)
            tk.call("unset", "-nocomplain", f"::tclnats::sockets({sock})")
            tk.call("chan", "event", sock, "readable", "")
            tk.call("tls::import", sock, *tk.splitlist(merged))
            tk.call("chan", "configure", sock, "-blocking", 0, "-translation", "binary",
                    "-buffering", "none", "-buffersize", 1 << 20)
        except TclError as err:
            self.engine.tls_failed(str(err))
            return
        self.tls_pending = (server, dict(zip(*[iter(tk.splitlist(merged))] * 2)))
        tk.call("chan", "event", sock, "readable", (self.cmd + "_ev", "tls_step"))
        # the first step sends the ClientHello; the effects of an outcome are
        # carried out by the run() that handed over StartTls
        self._tls_step()

    def e_tls_step(self):
        """A readable event during the TLS handshake."""
        if self.tls_pending is None or not self.sock:
            return
        self._tls_step()
        self.run()

    def _tls_step(self):
        """One step of the handshake: ``tls::handshake`` returns 0 while it
        is in progress, 1 once done, and raises when it failed."""
        tk = self.tk
        sock = self.sock
        try:
            done = tk.getboolean(tk.call("tls::handshake", sock))
        except TclError as e:
            self.tls_pending = None
            tk.call("chan", "event", sock, "readable", "")
            self.engine.tls_failed(str(e))
            return
        if not done:
            return
        server, given = self.tls_pending
        self.tls_pending = None
        self._read_with_c(sock)
        try:
            # TclTLS checked the chain (-require); the name in the certificate is ours to check
            if tk.getboolean(given.get("-require", 1)):
                status = dict(zip(*[iter(tk.splitlist(tk.call("tls::status", sock)))] * 2))
                check_server_name(str(status.get("certificate", "")),
                                  self.engine.pool.tls_name(server, str(given.get("-servername") or "")))
        except (TclError, NatsError) as e:
            self.engine.tls_failed(str(e))
            return
        self.engine.tls_done()

    # ------------------------------------------------------------ the Tcl publish fast path
    def drain_tcl_pubs(self):
        """Hand the publishes framed in Tcl to the engine, in order; or,
        connected with nothing else queued and the socket taking all so
        far, write them from the C buffer to the socket at once."""
        self.tcl_pending = False
        eng = self.engine
        if self.sock and not self.chan_pending and eng.status == CONNECTED and not eng.want_write \
                and (not eng.websocket or eng.websocket_plain):
            # (a WebSocket's bytes go out in frames: in one binary frame from C when
            # they are plain, else through the engine)
            key = (os.urandom(4),) if eng.websocket else ()
            try:
                count, nbytes, pending = self.tk.call(f"{self.ns}::Fast", "write", self.sock, *key)
            except TclError as e:
                eng.write_failed(str(e))
                return
            if count:
                stats = eng.stats
                stats["out_msgs"] += int(count)
                stats["out_bytes"] += int(nbytes)
            self.chan_pending = int(pending)
            if self.chan_pending and not self.drain_armed:
                # (as _pump: e_drain writes on and wakes publishers waiting for room)
                self.drain_armed = True
                self.tk.call("chan", "event", self.sock, "writable", (self.cmd + "_ev", "drain"))
            return
        count, buf = self.tk.call(f"{self.ns}::Fast", "take")
        if not count:
            return
        # subjects, replies and sizes were checked when they entered the fast path
        self.engine.publish_framed(to_bytes(buf), int(count))

    def _save_tcl_pubs(self):
        """The connection is no longer up: the fast path's batch, accepted
        by publish calls that returned, goes to the reconnect buffer.  Should
        that be full, the messages are lost, and the log says so."""
        try:
            self.drain_tcl_pubs()
        except NatsError as e:
            self._log("warn", f"Publishes framed before the connection broke were dropped: {e}")

    def _fast_path(self):
        """Open the Tcl publish fast path (FastMax = max_payload) or close it (-1)."""
        eng = self.engine
        limit = -1
        # only while connected: during an outage every publish goes through
        # Engine.publish, which bounds the reconnect buffer
        if not self.utf8 and eng.status == CONNECTED:
            mp = (eng.server_info or {}).get("max_payload")
            if isinstance(mp, int):
                limit = mp
        if limit != self.fast_max:
            self.fast_max = limit
            self.tk.call("set", f"{self.ns}::FastMax", limit)
        self._show_room()

    def _show_room(self):
        """FastRoom: the payload bytes the fast path frames before it calls
        c_room; -1 while the way to the socket is full, so that the next
        fast-path publish waits (MakeRoom) even when posted flushes keep
        taking its batch to the engine (a publisher driven by events)."""
        eng = self.engine
        if eng.status == CONNECTED and eng.write_pressure(self.chan_pending):
            room = -1
        else:
            room = max(0, min(FAST_BATCH, eng.options.write_buf_size // 4))
        if room != self.fast_room:
            self.fast_room = room
            self.tk.call("set", f"{self.ns}::FastRoom", room)

    # ------------------------------------------------------------ the C state (Fast)
    def _fast(self, *args):
        """A call of the connection's C state (Fast); None when it is gone
        (the object is being destroyed)."""
        try:
            return self.tk.call(f"{self.ns}::Fast", *args)
        except TclError:
            return None

    def _fast_limits(self):
        o = self.engine.options
        return (o.pending_msgs_limit if o.pending_msgs_limit > 0 else 0,
                o.pending_bytes_limit if o.pending_bytes_limit > 0 else 0)

    def _fast_sub(self, sub):
        """Plain messages of a subscription with a callback (no -max_msgs,
        no utf8 conversion) go from the C reader to the callback without
        Python (as the message dict :meth:`_msg_value` makes, with -dictmsg)."""
        cb, dictmsg, _post = sub.handler
        if cb and not self.utf8 and not sub.max_msgs and sub.kind == "user":
            self._fast("sub", sub.sid, cb, *self._fast_limits(), int(bool(dictmsg)))

    def _fast_unsub(self, sid):
        """The C reader forgets a subscription; the engine learns how many
        messages it had received through it."""
        got = self._fast("unsub", sid)
        if got:
            sub = self.engine.subs.get(int(sid))
            if sub is not None:
                sub.received += int(got)
