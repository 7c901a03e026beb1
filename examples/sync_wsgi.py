"""A plain WSGI app that answers each HTTP request with a NATS request/reply.

    python examples/sync_wsgi.py [nats://127.0.0.1:4222] [port]
    curl 'http://127.0.0.1:8000/greet?name=Ada'    ->  Hello, Ada!

The app holds one blocking client (tclnats_py.sync) for the whole process:
every WSGI worker thread calls ``nc.request`` on it, which is safe from any
thread.  A NATS service answers ``greet`` (started here too, so the example
runs on its own; in real life it is another program).  No framework: the
standard library's wsgiref serves it, and any WSGI server (gunicorn with
threads, uWSGI, mod_wsgi) can serve ``make_app(...)`` the same way; with a
forking server, connect in each worker after the fork (see the blocking
face's guide, "Threads and processes").  tests/sync/test_examples.py runs it.
"""

from __future__ import annotations

import json
import socketserver
import sys
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIServer, make_server

import tclnats_py
from tclnats_py import sync


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """wsgiref's server with a thread per HTTP request: the client is shared by them."""
    daemon_threads = True


def start_service(url: str) -> sync.Client:
    """The NATS side: ``greet`` answers ``Hello, <name>!``."""
    svc = sync.connect(url, name="greet-service")
    svc.subscribe("greet", queue="greeters", cb=lambda m: m.respond(b"Hello, " + m.data + b"!"))
    svc.flush()
    return svc


#: what a WSGI server hands an app: the environ and start_response
StartResponse = Callable[..., Any]
App = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def make_app(nc: sync.Client) -> App:
    """The WSGI application: ``/greet?name=...`` asks the service over NATS."""
    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/greet":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"try /greet?name=you\n"]
        name = parse_qs(environ.get("QUERY_STRING", "")).get("name", ["world"])[0]
        try:
            reply = nc.request("greet", name.encode(), timeout=2)
        except tclnats_py.ErrNoResponders:
            start_response("503 Service Unavailable", [("Content-Type", "application/json")])
            return [json.dumps({"error": "no greeter is running"}).encode()]
        except tclnats_py.ErrTimeout:
            start_response("504 Gateway Timeout", [("Content-Type", "application/json")])
            return [json.dumps({"error": "the greeter did not answer in time"}).encode()]
        body = reply.data + b"\n"
        start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    return app


def main(url: str, port: int) -> None:
    svc = start_service(url)
    with sync.connect(url, name="wsgi-app") as nc:
        with make_server("127.0.0.1", port, make_app(nc), server_class=ThreadingWSGIServer) as httpd:
            print(f"serving on http://127.0.0.1:{httpd.server_port}/greet?name=you", flush=True)
            try:
                httpd.serve_forever()
            except KeyboardInterrupt:
                pass
    svc.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222",
         int(sys.argv[2]) if len(sys.argv) > 2 else 8000)
