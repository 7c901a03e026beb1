"""What the blocking face's JetStream tests share: a client and its context."""

import contextlib

import tclnats_py.sync


@contextlib.contextmanager
def js_client(server, **js_options):
    """A blocking client of ``server`` and its JetStream context; both closed at the end."""
    nc = tclnats_py.sync.connect(server.url)
    try:
        js = nc.jetstream(**js_options)
        try:
            yield nc, js
        finally:
            js.close()
    finally:
        nc.close()
