"""The sans-IO engine: everything both faces share, with no socket, clock,
thread or file.

``connection.Engine`` is one client connection (handshake, subscriptions,
requests, pings, reconnection); it takes calls and bytes and gives bytes and
typed effects (``effects``), as ``driver`` writes down.  Its parts: ``state``
(the phase table), ``outbound`` (effects and the bytes to write),
``registry`` (subscriptions, requests, pings, delivery), ``records`` (Msg
and friends), ``handshake`` (CONNECT, INFO, -ERR).  ``protocol`` frames the wire, ``pool`` keeps
the servers, ``options``/``validate``/``subjects``/``headers`` are the input
rules, ``auth`` signs, and ``js`` holds JetStream, Key-Value and Object Store.
See ARCHITECTURE.md.
"""

from tclnats_py.engine.connection import CLOSED, CONNECTED, CONNECTING, RECONNECTING, Engine, Msg
from tclnats_py.engine.options import Options

__all__ = ["Engine", "Msg", "Options", "CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING"]
