"""A poll(2) notifier for the Tcl event loop of a Python program that hosts Tcl.

Tcl's event loop (``vwait``, ``update``, ``after``, ``fileevent``) sits on a
*notifier*: the part that waits for file descriptors and timeouts.  A
threaded Tcl 8.6 on Unix (Debian's, the one tkinter loads) waits in a
separate notifier thread: every turn of the event loop, even ``update`` with
nothing to do, hands a select mask to that thread through a pipe and waits on
a condition variable for its answer.  On this project's 2-core VM one such
turn costs about 90 microseconds (measured: 20,000 × ``after 0; vwait``),
which bounds every request/reply round trip made from Tcl.

Tcl lets an embedder replace the notifier (``Tcl_SetNotifier``; Tk does it
on macOS).  This module installs one that waits with poll(2) in the calling
thread, in the same shape as Tcl's own non-threaded Unix notifier: file
handlers per thread, a ready mask per handler, one queued file event per
ready descriptor, and a wake-up pipe per thread for ``Tcl_AlertNotifier``
(``thread::send`` and tkinter's cross-thread calls).  Everything above it,
the event queue, timers, idle callbacks, ``vwait``, is Tcl's own.

It must be installed before ``_tkinter`` is imported (Tcl sets up the main
thread's notifier then).  It is for a Python program whose Tcl runs in its
own thread: Thread-package workers (Tcl threads that Python does not run)
wait forever under it, so such programs keep Tcl's notifier.
``tclnats-tclsh`` is the stock tclsh and keeps Tcl's notifier.  Callbacks here never call tkinter (it holds
its own lock while Tcl runs); they use libtcl through ctypes only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sys
import threading
import traceback

__all__ = ["install", "installed"]

TCL_READABLE, TCL_WRITABLE, TCL_EXCEPTION = 1 << 1, 1 << 2, 1 << 3
TCL_FILE_EVENTS = 1 << 3
TCL_QUEUE_TAIL = 0

_SET_TIMER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_WAIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_CREATE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_DELETE = ctypes.CFUNCTYPE(None, ctypes.c_int)
_INIT = ctypes.CFUNCTYPE(ctypes.c_void_p)
_FINALIZE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_ALERT = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_SERVICE_MODE = ctypes.CFUNCTYPE(None, ctypes.c_int)
_EVENT_PROC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_FILE_PROC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)


class _Procs(ctypes.Structure):
    _fields_ = [("setTimerProc", _SET_TIMER), ("waitForEventProc", _WAIT),
                ("createFileHandlerProc", _CREATE), ("deleteFileHandlerProc", _DELETE),
                ("initNotifierProc", _INIT), ("finalizeNotifierProc", _FINALIZE),
                ("alertNotifierProc", _ALERT), ("serviceModeHookProc", _SERVICE_MODE)]


class _Time(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("usec", ctypes.c_long)]


class _FileEvent(ctypes.Structure):
    # Tcl_Event (proc, nextPtr) followed by the descriptor
    _fields_ = [("proc", ctypes.c_void_p), ("nextPtr", ctypes.c_void_p), ("fd", ctypes.c_int)]


_IN = select.POLLIN | select.POLLHUP | select.POLLERR
_OUT = select.POLLOUT | select.POLLHUP | select.POLLERR


class _Handler:
    __slots__ = ("mask", "ready", "proc", "data", "seq")

    def __init__(self, mask, proc, data, seq):
        self.mask = mask
        self.ready = 0
        self.proc = proc
        self.data = data
        self.seq = seq   # Tcl visits its handlers newest first; so do we


class _ThreadState:
    """The notifier of one thread: its file handlers and wake-up pipe."""

    def __init__(self, token: int):
        self.token = token
        self.handlers: dict[int, _Handler] = {}
        self.seq = 0
        self.poll = select.poll()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.poll.register(self.wake_r, select.POLLIN)

    def close(self):
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


class _Notifier:
    def __init__(self, lib):
        self.lib = lib
        lib.Tcl_Alloc.restype = ctypes.c_void_p
        lib.Tcl_Alloc.argtypes = [ctypes.c_uint]
        lib.Tcl_QueueEvent.restype = None
        lib.Tcl_QueueEvent.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.local = threading.local()
        self.states: dict[int, _ThreadState] = {}   # token -> state (for alerts)
        self.lock = threading.Lock()
        self.next_token = 1
        self.file_procs: dict[int, object] = {}     # C address -> callable
        # the ctypes callbacks must live as long as the process
        self.event_proc = _EVENT_PROC(self._event_proc)
        self.event_proc_addr = ctypes.cast(self.event_proc, ctypes.c_void_p).value
        self.procs = _Procs(_SET_TIMER(self._set_timer), _WAIT(self._wait),
                            _CREATE(self._create), _DELETE(self._delete),
                            _INIT(self._init), _FINALIZE(self._finalize),
                            _ALERT(self._alert), _SERVICE_MODE(self._service_mode))

    # each entry point reports its own failures (ctypes would only print
    # "Exception ignored"); none may raise into C
    def _report(self, where):
        sys.stderr.write(f"tclnats_py notifier: error in {where}:\n{traceback.format_exc()}")
        sys.stderr.flush()

    def _state(self) -> _ThreadState:
        st = getattr(self.local, "state", None)
        if st is None:
            # a thread whose Tcl notifier was set up before we were installed
            st = self._new_state()
        return st

    def _new_state(self) -> _ThreadState:
        with self.lock:
            token = self.next_token
            self.next_token += 1
            st = _ThreadState(token)
            self.states[token] = st
        self.local.state = st
        return st

    def _init(self):
        try:
            return self._new_state().token
        except BaseException:
            self._report("init")
            return 0

    def _finalize(self, token):
        try:
            with self.lock:
                st = self.states.pop(token or 0, None)
            if st is not None:
                st.close()
            if getattr(self.local, "state", None) is st:
                self.local.state = None
        except BaseException:
            self._report("finalize")

    def _alert(self, token):
        try:
            st = self.states.get(token or 0)
            if st is not None:
                try:
                    os.write(st.wake_w, b"x")
                except BlockingIOError:
                    pass  # the pipe is full: the thread is awake anyway
        except BaseException:
            self._report("alert")

    def _set_timer(self, time_ptr):
        # as in Tcl's own Unix notifier: timeouts reach us through
        # Tcl_WaitForEvent, so there is nothing to arm here
        return None

    def _service_mode(self, mode):
        return None

    def _create(self, fd, mask, proc, data):
        try:
            st = self._state()
            fn = self.file_procs.get(proc)
            if fn is None:
                fn = self.file_procs[proc] = _FILE_PROC(proc)
            h = st.handlers.get(fd)
            if h is None:
                st.seq += 1
                st.handlers[fd] = _Handler(mask, fn, data, st.seq)
            else:
                h.mask, h.proc, h.data = mask, fn, data
            events = 0
            if mask & TCL_READABLE:
                events |= select.POLLIN
            if mask & TCL_WRITABLE:
                events |= select.POLLOUT
            if mask & TCL_EXCEPTION:
                events |= select.POLLPRI
            st.poll.register(fd, events)
        except BaseException:
            self._report("create file handler")

    def _delete(self, fd):
        try:
            st = self._state()
            if st.handlers.pop(fd, None) is not None:
                try:
                    st.poll.unregister(fd)
                except KeyError:
                    pass
        except BaseException:
            self._report("delete file handler")

    def _wait(self, time_ptr):
        try:
            st = self._state()
            if time_ptr:
                t = _Time.from_address(time_ptr)
                timeout = t.sec * 1000 + (t.usec + 999) // 1000
                if timeout < 0:
                    timeout = 0
            else:
                timeout = None
            ready = st.poll.poll(timeout)
            if not ready:
                return 0
            handlers = st.handlers
            found = 0
            if len(ready) > 1:
                # queue file events in the order Tcl's own notifier would
                ready.sort(key=lambda r: -handlers[r[0]].seq if r[0] in handlers else 0)
            for fd, ev in ready:
                if fd == st.wake_r:
                    try:
                        while os.read(st.wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                    found = 1
                    continue
                h = handlers.get(fd)
                if h is None:
                    continue
                mask = 0
                if ev & _IN and h.mask & TCL_READABLE:
                    mask |= TCL_READABLE
                if ev & _OUT and h.mask & TCL_WRITABLE:
                    mask |= TCL_WRITABLE
                if ev & select.POLLPRI and h.mask & TCL_EXCEPTION:
                    mask |= TCL_EXCEPTION
                if not mask:
                    continue
                found = 1
                if not h.ready:
                    self._queue(fd)
                h.ready = mask
            return found
        except KeyboardInterrupt:
            # tclsh dies on SIGINT; so does tclnats-tclsh
            os._exit(130)
        except BaseException:
            self._report("wait for event")
            return -1

    def _queue(self, fd):
        ev = self.lib.Tcl_Alloc(ctypes.sizeof(_FileEvent))
        e = _FileEvent.from_address(ev)
        e.proc = self.event_proc_addr
        e.nextPtr = None
        e.fd = fd
        self.lib.Tcl_QueueEvent(ev, TCL_QUEUE_TAIL)   # Tcl frees it once serviced

    def _event_proc(self, ev, flags):
        if not flags & TCL_FILE_EVENTS:
            return 0
        try:
            fd = _FileEvent.from_address(ev).fd
            h = self._state().handlers.get(fd)
            if h is not None:
                mask = h.ready & h.mask
                h.ready = 0
                if mask:
                    h.proc(h.data, mask)
        except BaseException:
            self._report("file event")
        return 1


_installed: _Notifier | None = None


def installed() -> bool:
    return _installed is not None


def install() -> bool:
    """Install the poll notifier; False (and Tcl's own stays) when it cannot
    be: _tkinter already imported, or no libtcl8.6 to load."""
    global _installed
    if _installed is not None:
        return True
    if "_tkinter" in sys.modules:
        return False
    name = ctypes.util.find_library("tcl8.6")
    if not name:
        return False
    try:
        lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        version = (ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int())
        lib.Tcl_GetVersion(*(ctypes.byref(v) for v in version))
        if (version[0].value, version[1].value) != (8, 6):
            return False
        notifier = _Notifier(lib)
        lib.Tcl_SetNotifier.restype = None
        lib.Tcl_SetNotifier.argtypes = [ctypes.POINTER(_Procs)]
        lib.Tcl_SetNotifier(ctypes.byref(notifier.procs))
    except (OSError, AttributeError) as e:
        sys.stderr.write(f"tclnats_py: Tcl's own notifier stays ({e})\n")
        return False
    _installed = notifier
    return True
