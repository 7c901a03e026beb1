"""The connection's phases and the events that move it: the state machine,
written as one table.

Rule: everything that decides which phase the engine is in lives in this
file.  The Engine (``connection.py``) holds the current phase and asks
:func:`move` at every event below; it never picks a phase itself.

Two levels.  The **status** is what users see (:data:`CLOSED`,
:data:`CONNECTING`, :data:`CONNECTED`, :data:`RECONNECTING`; nats-tcl's
four).  The **phase** is where the connection stands below it, one of:

==============  ===========================================================
``IDLE``        no socket, nothing scheduled: closed (status closed), or for
                an instant between a dropped socket and the next step
``OPENING``     ``Open`` asked; the driver's ``socket_connected`` is next
``WAIT_INFO``   the socket is up (over TLS already, with tls_first): the
                server's INFO is next
``TLS``         ``StartTls`` asked; the driver's ``tls_done`` is next
``UPGRADE``     a WebSocket server's HTTP exchange (``websocket.py``): an
                HTTP proxy's CONNECT, then the upgrade request; the
                server's 101 answer is next (then the INFO, in frames)
``WAIT_PONG``   CONNECT and PING written: the server's PONG ends the
                handshake
``READY``       connected: the status is connected exactly in this phase
``WAIT_RETRY``  the ``reconnect`` timer runs before the next attempt
==============  ===========================================================

The events come in three kinds, and the table treats them alike:

* **reports** of the driver (the calls of ``driver.EngineIO`` and its
  timers): ``SOCKET_CONNECTED``, ``SOCKET_FAILED``, ``TLS_DONE``,
  ``TLS_FAILED``, ``DATA`` (receive_data), ``LOST`` (connection_lost,
  write_failed), ``CONNECT_TIMER``, ``RETRY_TIMER``, ``PING_TIMER``;
* **frames** from the server that matter to the phase: ``INFO`` and
  ``PONG`` (every other frame is handled wherever ``DATA`` is);
* **steps** the engine takes: ``OPEN``, ``BACKOFF``, ``START_TLS``,
  ``HTTP_UPGRADE``, ``EXPECT_INFO``, ``SEND_CONNECT``, ``CONNECTED``,
  ``DROP``, ``CLOSE``.

A report or a frame never moves the phase by itself: its entry is the phase
it is handled in (or :data:`IGNORE`), and the steps the engine takes in
answer move it.  A cell of the table is one of

* a phase: the event is handled here, and the engine is in that phase after
  it (for a report or a frame, the same phase);
* :data:`IGNORE`: the event is dropped on purpose.  Only reports and frames
  are ever ignored, and only where they can arrive late: about a socket the
  engine has dropped already, a timer it cancelled that fired anyway, a
  frame the server sends before its turn;
* ``None``: no entry.  The event cannot happen in that phase unless the
  engine (or a driver calling it wrongly) has a bug: :func:`move` raises
  :class:`PhaseError`.
"""

from __future__ import annotations

__all__ = ["CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING", "PHASES", "EVENTS", "REPORTS", "FRAMES",
           "STEPS", "IGNORE", "TABLE", "TRANSITIONS", "SOCKET_PHASES", "PhaseError", "move",
           "IDLE", "OPENING", "WAIT_INFO", "TLS", "UPGRADE", "WAIT_PONG", "READY", "WAIT_RETRY",
           "SOCKET_CONNECTED", "SOCKET_FAILED", "TLS_DONE", "TLS_FAILED", "DATA", "LOST", "CONNECT_TIMER",
           "RETRY_TIMER", "PING_TIMER", "INFO", "PONG", "OPEN", "BACKOFF", "START_TLS", "HTTP_UPGRADE", "EXPECT_INFO",
           "SEND_CONNECT", "CONNECTED_STEP", "DROP", "CLOSE"]

# the statuses users see (Engine.status, StatusChanged)
CLOSED, CONNECTING, CONNECTED, RECONNECTING = "closed", "connecting", "connected", "reconnecting"

# the phases below the status
IDLE = "IDLE"
OPENING = "OPENING"
WAIT_INFO = "WAIT_INFO"
TLS = "TLS"
UPGRADE = "UPGRADE"
WAIT_PONG = "WAIT_PONG"
READY = "READY"
WAIT_RETRY = "WAIT_RETRY"
PHASES = (IDLE, OPENING, WAIT_INFO, TLS, UPGRADE, WAIT_PONG, READY, WAIT_RETRY)

# reports of the driver
SOCKET_CONNECTED = "socket_connected"
SOCKET_FAILED = "socket_failed"
TLS_DONE = "tls_done"
TLS_FAILED = "tls_failed"
DATA = "receive_data"
LOST = "connection_lost"
CONNECT_TIMER = "connect timer"
RETRY_TIMER = "reconnect timer"
PING_TIMER = "ping timer"
REPORTS = (SOCKET_CONNECTED, SOCKET_FAILED, TLS_DONE, TLS_FAILED, DATA, LOST, CONNECT_TIMER, RETRY_TIMER,
           PING_TIMER)

# frames from the server
INFO = "INFO"
PONG = "PONG"
FRAMES = (INFO, PONG)

# steps of the engine
OPEN = "open"                   # Open(server): a new attempt
BACKOFF = "backoff"             # StartTimer("reconnect"): wait before the next attempt
START_TLS = "start TLS"         # StartTls(server)
HTTP_UPGRADE = "HTTP upgrade"   # a WebSocket server: the proxy's CONNECT or the upgrade request written
EXPECT_INFO = "expect INFO"     # plain socket up, TLS-first done, or the WebSocket open: INFO is next
SEND_CONNECT = "send CONNECT"   # CONNECT + PING written
CONNECTED_STEP = "connected"    # the handshake's PONG (or its EOF, handshake_eof_connects)
DROP = "drop"                   # Close(): the socket goes (an error, force_reconnect)
CLOSE = "close"                 # disconnect, or no server left
STEPS = (OPEN, BACKOFF, START_TLS, HTTP_UPGRADE, EXPECT_INFO, SEND_CONNECT, CONNECTED_STEP, DROP, CLOSE)

EVENTS = REPORTS + FRAMES + STEPS


class _Ignore:
    __slots__ = ()

    def __repr__(self) -> str:
        return "IGNORE"


IGNORE = _Ignore()
"""A cell of the table: the event is dropped on purpose in that phase."""

_ = IGNORE
X = None   # no entry: PhaseError

# The table: an event (row) in a phase (column) -> the phase after it,
# IGNORE, or X (no entry).
#
#                    IDLE     OPENING     WAIT_INFO   TLS         UPGRADE     WAIT_PONG   READY       WAIT_RETRY
TABLE: tuple = (
    # -- reports of the driver
    # the TCP connection is up: then EXPECT_INFO, START_TLS (tls_first, wss) or HTTP_UPGRADE (ws)
    (SOCKET_CONNECTED, _,     OPENING,    _,          _,          _,          _,          _,          _),
    # the TCP connection failed: then DROP
    (SOCKET_FAILED,    _,     OPENING,    _,          _,          _,          _,          _,          _),
    # the TLS handshake is done: then EXPECT_INFO (tls_first), SEND_CONNECT, or HTTP_UPGRADE (wss)
    (TLS_DONE,         _,     _,          _,          TLS,        _,          _,          _,          _),
    # the TLS handshake failed: then DROP
    (TLS_FAILED,       _,     _,          _,          TLS,        _,          _,          _,          _),
    # bytes read: parsed and handled (frames below); a dropped socket's are ignored
    (DATA,             _,     OPENING,    WAIT_INFO,  TLS,        UPGRADE,    WAIT_PONG,  READY,      _),
    # the socket broke, reached EOF, or a write failed: then DROP
    (LOST,             _,     OPENING,    WAIT_INFO,  TLS,        UPGRADE,    WAIT_PONG,  READY,      _),
    # the connect timeout: then DROP
    (CONNECT_TIMER,    _,     OPENING,    WAIT_INFO,  TLS,        UPGRADE,    WAIT_PONG,  _,          _),
    # the wait before the next attempt is over: then OPEN
    (RETRY_TIMER,      _,     _,          _,          _,          _,          _,          _,          WAIT_RETRY),
    # keep-alive: a PING, or DROP when too many went unanswered
    (PING_TIMER,       _,     _,          _,          _,          _,          _,          READY,      _),
    # -- frames from the server (only read where DATA is handled; a WebSocket
    # gives none before its 101)
    # the handshake's INFO (then START_TLS, SEND_CONNECT or DROP) or an update;
    # one before the socket is reported up, or in the clear during TLS, is ignored
    (INFO,             X,     _,          WAIT_INFO,  _,          X,          WAIT_PONG,  READY,      X),
    # the handshake's PONG (then CONNECTED), an answer to a PING, or a stray one
    (PONG,             X,     OPENING,    WAIT_INFO,  TLS,        X,          WAIT_PONG,  READY,      X),
    # -- steps of the engine
    (OPEN,             OPENING, X,        X,          X,          X,          X,          X,          OPENING),
    (BACKOFF,          WAIT_RETRY, X,     X,          X,          X,          X,          X,          X),
    # (from UPGRADE: wss through a proxy, TLS once the tunnel is up)
    (START_TLS,        X,     TLS,        TLS,        X,          TLS,        X,          X,          X),
    # (from UPGRADE: ws through a proxy, the upgrade once the tunnel is up)
    (HTTP_UPGRADE,     X,     UPGRADE,    X,          UPGRADE,    UPGRADE,    X,          X,          X),
    (EXPECT_INFO,      X,     WAIT_INFO,  X,          WAIT_INFO,  WAIT_INFO,  X,          X,          X),
    (SEND_CONNECT,     X,     X,          WAIT_PONG,  WAIT_PONG,  X,          X,          X,          X),
    (CONNECTED_STEP,   X,     X,          X,          X,          X,          READY,      X,          X),
    (DROP,             X,     IDLE,       IDLE,       IDLE,       IDLE,       IDLE,       IDLE,       X),
    (CLOSE,            IDLE,  IDLE,       IDLE,       IDLE,       IDLE,       IDLE,       IDLE,       IDLE),
)

# (phase, event) -> the phase after it, or IGNORE; no key: no entry
TRANSITIONS: dict[tuple[str, str], object] = {
    (phase, row[0]): cell for row in TABLE for phase, cell in zip(PHASES, row[1:]) if cell is not X
}

# the phases with a socket: where DATA is handled (Engine._socket_open
# caches "the phase is one of these" for the hot path)
SOCKET_PHASES = frozenset(p for p in PHASES if TRANSITIONS[p, DATA] is not IGNORE)


class PhaseError(RuntimeError):
    """An event in a phase where the table has no entry for it: a bug in the
    engine or in a driver's calls, never a condition of the network (those
    are NatsErrors).  ``phase`` and ``event`` name the cell."""

    def __init__(self, phase: str, event: str) -> None:
        super().__init__(f"engine state machine: no transition for {event!r} in phase {phase} "
                         "(see tclnats_py/engine/state.py)")
        self.phase = phase
        self.event = event


def move(phase: str, event: str) -> object:
    """The phase after ``event`` in ``phase``, or :data:`IGNORE`; raises
    :class:`PhaseError` where the table has no entry."""
    try:
        return TRANSITIONS[phase, event]
    except KeyError:
        raise PhaseError(phase, event) from None
