"""The server pool (CoreAPI.md "Connection Status and the Reconnection Process").

The pool is a FIFO of servers; the server in use is always the last one.
Every failed attempt increments that server's ``reconnects`` counter and
stamps ``last_attempt``; a server whose counter reaches
``max_reconnect_attempts`` (-1 = forever) leaves the pool.  During the first
round (status ``connecting``) every server is tried once only.  Servers
learnt from INFO ``connect_urls`` are added at the front, marked discovered.
No clock inside: callers pass ``now`` in milliseconds.
"""

from __future__ import annotations

import random
import re

from tclnats_py.errors import make_error

__all__ = ["Server", "ServerPool", "parse_url", "DEFAULT_PORTS", "WS_SCHEMES"]


class Server:
    __slots__ = ("scheme", "host", "port", "discovered", "reconnects", "last_attempt",
                 "user", "password", "auth_token", "last_auth_error", "path")

    def __init__(self, scheme, host, port, discovered=False, user=None, password=None,
                 auth_token=None):
        self.scheme = scheme
        self.host = host
        self.port = port
        self.discovered = discovered
        self.reconnects = 0
        self.last_attempt = 0
        self.user = user
        self.password = password
        self.auth_token = auth_token
        self.last_auth_error = None  # the code of the auth error of its last attempt
        self.path = "/"              # a WebSocket server's: the upgrade request's target

    def as_dict(self) -> dict:
        d = {"scheme": self.scheme, "host": self.host, "port": self.port,
             "discovered": "true" if self.discovered else "false",
             "reconnects": self.reconnects, "last_attempt": self.last_attempt}
        if self.user is not None:
            d["user"] = self.user
            d["password"] = self.password
        if self.auth_token is not None:
            d["auth_token"] = self.auth_token
        return d

    def key(self):
        return (self.host, self.port)

    def __repr__(self):
        return f"Server({self.scheme}://{self.host}:{self.port})"


# [scheme://][userinfo@]host[:port] where host may be [ipv6]
_URL = re.compile(
    r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?"
    r"(?:(?P<userinfo>[^@/]*)@)?"
    r"(?P<host>\[[0-9A-Fa-f:.%a-zA-Z]+\]|[^:/?#\[\]@\s]+)"
    r"(?::(?P<port>[^/?#]*))?"
    r"(?P<rest>.*)$"
)

# scheme -> the port when the URL has none (ws/wss: HTTP's)
DEFAULT_PORTS = {"nats": 4222, "tls": 4222, "ws": 80, "wss": 443}
# the schemes of WebSocket servers (engine/websocket.py, loaded for the first one)
WS_SCHEMES = ("ws", "wss")


def parse_url(url: str) -> Server:
    """Parse ``nats://[user:pass@|token@]host[:port]`` (``tls://``, and
    ``ws://``/``wss://`` with an optional path, ports 80/443 by default).

    Raises ErrInvalidArg for anything that is not a host with an optional
    numeric port (paths but a WebSocket URL's, bad ports, unknown schemes).
    """
    url = str(url).strip()
    m = _URL.match(url)
    scheme = ((m.group("scheme") if m else None) or "nats").lower()
    rest = m.group("rest") if m else ""
    if not m or scheme not in DEFAULT_PORTS or (rest and (scheme not in ("ws", "wss")
                                                          or not rest.startswith("/"))):
        raise make_error("ErrInvalidArg", f"Invalid URL {url}")
    host = m.group("host")
    if host.startswith("["):
        host = host[1:-1]
    port = m.group("port")
    if port is None or port == "":
        port = DEFAULT_PORTS[scheme]
    else:
        if not port.isdigit() or not (0 < int(port) < 65536):
            raise make_error("ErrInvalidArg", f"Invalid URL {url}")
        port = int(port)
    s = Server(scheme, host, port)
    if rest:
        s.path = rest
    ui = m.group("userinfo")
    if ui:
        from urllib.parse import unquote  # here: only a URL with user info needs it
        user, sep, pwd = ui.partition(":")
        if sep and pwd:
            s.user, s.password = unquote(user), unquote(pwd)
        else:
            s.auth_token = unquote(user)
    return s


def is_ip_address(host: str) -> bool:
    """Whether ``host`` is an IPv4 or IPv6 address (brackets allowed)."""
    import ipaddress  # here: asked of discovered servers and TLS hosts only
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class NoServers(Exception):
    """Raised by next_server when the pool has nobody left to try."""


class ServerPool:
    def __init__(self, rng: random.Random | None = None):
        self.servers: list[Server] = []
        self._rng = rng or random.Random()
        # nats-tcl 2.x's rule: a connection, not only a failed attempt,
        # starts a server's reconnect_time_wait (3.x waits after failures only)
        self.wait_after_connect = False

    def set_servers(self, urls, randomize: bool) -> None:
        """All or nothing: one bad URL leaves the old list untouched."""
        parsed = [parse_url(u) for u in urls]
        if randomize:
            seen: dict[tuple, Server] = {}
            for s in parsed:
                seen.setdefault((s.scheme, s.host, s.port, s.user, s.password, s.auth_token), s)
            parsed = list(seen.values())
            self._rng.shuffle(parsed)
        self.servers = parsed

    def clear(self) -> None:
        self.servers = []

    def add_discovered(self, url: str, scheme: str | None = None) -> Server | None:
        """Add a server learnt from INFO connect_urls at the front; None when
        it is in the pool already or ``url`` is malformed (the engine says so).
        ``scheme``: the one of a URL without its own (a WebSocket server's
        connect_urls are host:port, and take the scheme of the server that sent them)."""
        if scheme is not None and "://" not in url:
            url = f"{scheme}://{url}"
        try:
            s = parse_url(url)
        except Exception:
            return None
        for old in self.servers:
            if old.host == s.host and old.port == s.port:
                return None
        s.discovered = True
        self.servers.insert(0, s)
        return s

    def reset_counters(self) -> None:
        for s in self.servers:
            s.reconnects = 0
            s.last_attempt = 0

    @property
    def current(self) -> Server | None:
        return self.servers[-1] if self.servers else None

    def next_server(self, first_round: bool, max_attempts: int, delay_for, now: int):
        """Rotate to the next usable server; return ``(server, wait_ms)``.

        ``delay_for(server)`` gives the wait between two attempts on the same
        server (reconnect_time_wait or the user's callback).  Raises
        :class:`NoServers` when the pool is exhausted.
        """
        while True:
            if not self.servers:
                raise NoServers("Server pool is empty")
            s = self.servers[0]
            if first_round and s.reconnects:
                raise NoServers("No servers available for connection")
            del self.servers[0]
            if max_attempts >= 0 and s.reconnects >= max_attempts:
                continue  # dropped from the pool
            wait = 0
            if s.reconnects > 0 or (self.wait_after_connect and s.last_attempt):
                w = int(delay_for(s))
                if now < s.last_attempt + w:
                    wait = w - (now - s.last_attempt)
            self.servers.append(s)
            return s, wait

    def current_done(self, ok: bool, now: int) -> None:
        s = self.current
        if s is None:
            return
        if ok:
            s.reconnects = 0
            s.last_attempt = now if self.wait_after_connect else 0
        else:
            s.reconnects += 1
            s.last_attempt = now

    def tls_name(self, server: Server, override: str | None = None) -> str:
        """The name ``server``'s certificate must carry, for both faces: the
        user's ``override`` (Tcl: -servername; Python: tls_hostname) when
        given; else the host we connect to, except that a server learnt from
        INFO connect_urls by IP address is checked against the host name of
        a server the user configured (as nats.go does: a cluster announces
        addresses, its certificates name hosts)."""
        if override:
            return override
        if server.discovered and is_ip_address(server.host):
            for s in self.servers:
                if not s.discovered and not is_ip_address(s.host):
                    return s.host
        return server.host

    def credentials(self, user: str, password: str, token: str):
        """Credentials for the current server: URL ones first, then the defaults."""
        s = self.current
        if s is not None:
            if s.user is not None and s.password:
                return {"user": s.user, "pass": s.password}
            if s.auth_token is not None:
                return {"auth_token": s.auth_token}
        if user and password:
            return {"user": user, "pass": password}
        if token:
            return {"auth_token": token}
        return None
