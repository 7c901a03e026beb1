"""NATS services (ADR-32) for the Tcl face: the Python side of ``nats::service``.

The TclOO classes ``nats::service`` and ``nats::service_group`` (tcl/service.tcl)
hold the user's callbacks and run them; the service itself, its checks,
endpoints, counters and PING/INFO/STATS answers are the engine's
:class:`tclnats_py.engine.micro.ServiceCore`.  What is here converts:

* Tcl values in: the ``-metadata`` dicts, the message dicts handed to
  ``respond`` / ``respond_error`` (their ``reply`` and ``sub_id``), payloads and
  headers (as the connection's publish takes them);
* subscriptions: each control subject is a subscription whose callback is
  this object's ``control`` command (answered here, no Tcl frame); each
  endpoint is a queue subscription whose callback is the Tcl object's
  ``Serve`` method with the endpoint's number, which runs the user's
  callback between ``begin`` and ``end`` (timed here);
* results out: ``info`` and ``stats`` as Tcl dicts (JSON as tcllib's
  json2dict shows it).

Every command answers ``{0 result}`` or ``{1 errorcode message}`` through
:meth:`TclConnection.call`; bad arguments are ``{NATS ErrInvalidArg}``.
"""

from __future__ import annotations

import datetime
import functools
import time
from typing import Any, Dict, List, Optional

from tclnats_py._tclcross import TclError
from tclnats_py.engine import micro as _micro
from tclnats_py.engine.connection import CLOSED
from tclnats_py.errors import NatsError, make_error
from tclnats_py.tclface.commands import tcl_commands
from tclnats_py.tclface.values import tcl_value

__all__ = ["TclService"]


def _invalid(text: str) -> NatsError:
    return make_error("ErrInvalidArg", text)


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _one_line(text: str) -> str:
    """A header value: line breaks become spaces."""
    return " ".join(str(text).splitlines())


@tcl_commands
class TclService:
    """One ``nats::service`` object's Python side (the command ``::tclnats::svcN``)."""

    def __init__(self, conn: Any, serve: str, name: str, version: str, description: str, metadata: Any,
                 queue_group: str) -> None:
        self.conn = conn
        self.tk = conn.tk
        self.core = _micro.ServiceCore(name, version, description or None, self._metadata(metadata) or None,
                                       queue_group or None, error=_invalid)
        self.serve = tuple(self.tk.splitlist(serve))   # the Tcl object's Serve callback prefix
        self.cmd = f"::tclnats::svc{next(conn.bridge.ids)}"
        self.groups: Dict[str, _micro.Group] = {}
        self.by_number: Dict[int, _micro.Endpoint] = {}
        self.by_sid: Dict[int, _micro.Endpoint] = {}
        self.control_sids: List[int] = []
        self.numbers = 0
        self.tk.createcommand(self.cmd, functools.partial(conn.call, self))
        try:
            for verb, subject in self.core.control():
                self.control_sids.append(conn.c_subscribe(subject, "", 0, (self.cmd, "control", verb), "0", "1"))
        except BaseException:
            self.c_destroy()
            raise
        self.core.start(_utcnow())

    # ------------------------------------------------------------ Tcl values in
    def _metadata(self, value: Any) -> Optional[Dict[str, str]]:
        if value is None or value == "":
            return None
        try:
            items = self.tk.splitlist(value)
        except TclError:
            raise _invalid(f"Invalid metadata {value}: a dict expected") from None
        if len(items) % 2:
            raise _invalid(f"Invalid metadata {value}: a dict expected")
        return {str(items[i]): str(items[i + 1]) for i in range(0, len(items), 2)}

    def _group(self, gid: str) -> Optional[_micro.Group]:
        if not gid:
            return None
        group = self.groups.get(str(gid))
        if group is None:
            raise _invalid(f"Invalid service group {gid}")
        return group

    def _msg(self, msg: Any) -> Dict[str, Any]:
        try:
            return self.conn.dict_from_tcl(msg)
        except (NatsError, TclError):
            raise _invalid("Invalid message: a message dict expected (the callback's msg argument)") from None

    def _endpoint(self, number: Any) -> _micro.Endpoint:
        try:
            return self.by_number[int(number)]
        except (KeyError, ValueError):
            raise _invalid(f"Invalid endpoint {number}") from None

    # ------------------------------------------------------------ control subjects
    def c_control(self, verb: str, _subject: str, _msg: Any, reply: str) -> None:
        """A PING, INFO or STATS request: answered with the engine's JSON."""
        if reply and not self.core.stopped:
            self.conn.engine.publish(reply, self.core.answer(verb))
            self.conn.run()

    # ------------------------------------------------------------ endpoints and groups
    def c_add_endpoint(self, gid: str, name: str, subject: str, queue_group: str, metadata: Any) -> int:
        """Subscribe an endpoint; its number (the Tcl object keeps its callback by it)."""
        core = self.core
        core.check_running()
        record = core.endpoint(name, subject or None, queue_group or None, self._metadata(metadata),
                               self._group(gid))
        self.numbers += 1
        number = self.numbers
        sid = self.conn.c_subscribe(record.subject, record.queue_group, 0, self.serve + (number,), "1", "1")
        record.handle = sid
        core.add(record)
        self.by_number[number] = record
        self.by_sid[int(sid)] = record
        return number

    def c_add_group(self, parent: str, name: str, queue_group: str) -> str:
        self.core.check_running()
        group = self.core.group(name, queue_group or None, self._group(parent))
        gid = f"g{len(self.groups) + 1}"
        self.groups[gid] = group
        return gid

    def c_group_prefix(self, gid: str) -> str:
        group = self._group(gid)
        return group.prefix if group is not None else ""

    # ------------------------------------------------------------ requests
    def c_begin(self, number: Any) -> int:
        """A request arrived at endpoint ``number``: counted; the start time (ns)."""
        _micro.ServiceCore.begin(self._endpoint(number))
        return time.perf_counter_ns()

    def c_end(self, number: Any, began: Any) -> None:
        """The callback returned."""
        _micro.ServiceCore.end(self._endpoint(number), time.perf_counter_ns() - int(began))

    def c_failed(self, number: Any, began: Any, msg: Any, error: str) -> None:
        """The callback raised ``error``: counted, logged, and the requester
        gets an error reply with code 500 (unless it has no reply subject)."""
        ep = self._endpoint(number)
        text = _one_line(error)
        _micro.ServiceCore.end(ep, time.perf_counter_ns() - int(began), f"500:{text}")
        self.conn._log("warn", f"service {self.core.name} endpoint {ep.name}: the callback failed: {error}")
        reply = str(self._msg(msg).get("reply", ""))
        if reply:
            self._publish(reply, b"", _micro.error_headers("500", text))

    def _publish(self, reply: str, data: Any, headers: Optional[Dict[str, str]]) -> int:
        hdr = tuple(x for k, v in (headers or {}).items() for x in (k, (v,)))
        return int(self.conn.c_publish(reply, data, "", hdr, "0"))

    def c_respond(self, msg: Any, data: Any, header: Any) -> int:
        """Reply to the request ``msg``; 0: the way to the socket is full
        (the Tcl layer waits for room and calls again)."""
        reply = str(self._msg(msg).get("reply", ""))
        if not reply:
            raise _invalid("The message has no reply subject to respond to")
        return int(self.conn.c_publish(reply, data, "", header, "0"))

    def c_respond_error(self, msg: Any, code: Any, description: Any, data: Any, counted: Any) -> int:
        """Reply with an error (the two service error headers); counted as an
        error of the endpoint the request came through (once: ``counted`` is
        0 on a retry after waiting for room)."""
        problem = _micro.error_code_of(code)
        if problem is not None:
            raise _invalid(problem)
        d = self._msg(msg)
        reply = str(d.get("reply", ""))
        if not reply:
            raise _invalid("The message has no reply subject to respond to")
        code, description = _one_line(code), _one_line(description)
        if str(counted) not in ("0", "false"):
            ep = self.by_sid.get(int(d["sub_id"])) if str(d.get("sub_id", "")).isdigit() else None
            if ep is not None:
                ep.stats.failed(f"{code}:{description}")
        return self._publish(reply, data, _micro.error_headers(code, description))

    # ------------------------------------------------------------ service
    def c_id(self) -> str:
        return self.core.id

    def c_name(self) -> str:
        return self.core.name

    def c_info(self) -> Any:
        return tcl_value(self.core.info())

    def c_stats(self) -> Any:
        return tcl_value(self.core.stats())

    def c_reset(self) -> None:
        self.core.reset(_utcnow())

    def c_stopped(self) -> int:
        return int(self.core.stopped)

    def c_stop(self) -> None:
        """Unsubscribe the endpoints and the control subjects (again: nothing)."""
        if self.core.stopped:
            return
        gone = self.core.stop()
        sids = [ep.handle for ep in gone] + self.control_sids
        self.control_sids = []
        conn = self.conn
        if conn.engine.status != CLOSED:
            for sid in sids:
                conn.c_unsubscribe(str(sid), "0")

    def c_destroy(self) -> None:
        try:
            self.c_stop()
        finally:
            try:
                self.tk.deletecommand(self.cmd)
            except TclError:
                pass
