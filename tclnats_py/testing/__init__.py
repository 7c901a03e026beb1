"""Test material for real nats-servers: TLS certificates and auth setups.

``tclnats_py.testing.certs``  a root CA with server and client certificates
                              (``generate_certs``), an unrelated CA
                              (``generate_unrelated_ca``), TLS config blocks.
``tclnats_py.testing.auth``   user/password, token, NKey and decentralized
                              JWT (operator/account/user, ``.creds``) setups:
                              server config snippets plus client material.

Servers themselves come from :mod:`tclnats_py.testing.server`.  ``cryptography`` is
needed for the certificates only, ``nkeys`` for the NKey and JWT setups.
"""

from tclnats_py.testing.server import NatsCluster, NatsServer, find_nats_server, free_port

__all__ = ["NatsCluster", "NatsServer", "auth", "certs", "find_nats_server", "free_port"]


def __getattr__(name):
    # the submodules load lazily: certs needs `cryptography`, which plain users may not have
    if name in ("certs", "auth"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
