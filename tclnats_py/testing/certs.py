"""Self-signed TLS material for tests: a root CA, a server and a client
certificate signed by it, and an unrelated CA for "failed verification" tests.

    paths = generate_certs(directory)            # rootCA.pem, server-cert.pem, client-cert.pem, ...
    other = generate_unrelated_ca(directory)     # other-rootCA.pem, other-client-cert.pem, ...
    conf  = tls_config(paths, verify=True)       # a nats-server `tls { ... }` block

Keys are ECDSA P-256 by default (fast to make; ``key_type="rsa"`` for RSA
2048).  Certificates carry what strict verifiers (Go, OpenSSL with
X509_STRICT) want: critical basic constraints and key usage, subject and
authority key identifiers, SANs (DNS and IP entries) and extended key usage
(server: serverAuth and clientAuth, so it also serves for routes; client:
clientAuth).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CA",
    "CERT_FILES",
    "client_context",
    "generate_ca",
    "generate_certs",
    "generate_unrelated_ca",
    "issue_cert",
    "tls_config",
]

DEFAULT_HOSTS = ("localhost", "127.0.0.1", "::1")

#: the file names generate_certs writes, by the key of the dict it returns
CERT_FILES = {
    "ca": "rootCA.pem",
    "ca_key": "rootCA-key.pem",
    "server_cert": "server-cert.pem",
    "server_key": "server-key.pem",
    "client_cert": "client-cert.pem",
    "client_key": "client-key.pem",
}

_VALID_DAYS = 3650


def _new_key(key_type: str):
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"key_type must be 'ec' or 'rsa', not {key_type!r}")


def _write_key(path: str, key) -> None:
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_cert(path: str, cert: x509.Certificate) -> None:
    with open(path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, org: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _validity():
    now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017  (3.10)
    return now - datetime.timedelta(days=1), now + datetime.timedelta(days=_VALID_DAYS)


def _san(hosts) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for h in hosts:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            entries.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(entries)


class CA:
    """A certificate authority: its certificate and key (in memory)."""

    def __init__(self, cert: x509.Certificate, key):
        self.cert = cert
        self.key = key


def generate_ca(common_name: str = "tclnats test root CA", org: str = "tclnats_py tests",
                key_type: str = "ec") -> CA:
    """A new self-signed root CA (in memory; see :func:`write_ca`)."""
    key = _new_key(key_type)
    name = _name(common_name, org)
    not_before, not_after = _validity()
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(ski, critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
            .sign(key, hashes.SHA256()))
    return CA(cert, key)


def issue_cert(ca: CA, common_name: str, hosts=(), server: bool = True, client: bool = False,
               key_type: str = "ec", org: str = "tclnats_py tests"):
    """A leaf certificate signed by ``ca``: ``(cert, key)``.

    ``hosts`` become SANs (IP entries for addresses, DNS entries otherwise);
    ``server``/``client`` choose the extended key usages.
    """
    key = _new_key(key_type)
    not_before, not_after = _validity()
    ekus = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
    if not ekus:
        raise ValueError("a certificate for neither server nor client")
    builder = (x509.CertificateBuilder()
               .subject_name(_name(common_name, org)).issuer_name(ca.cert.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                            key_encipherment=(key_type == "rsa"), data_encipherment=False,
                                            key_agreement=False, key_cert_sign=False, crl_sign=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
                              critical=False))
    if hosts:
        builder = builder.add_extension(_san(hosts), critical=False)
    return builder.sign(ca.key, hashes.SHA256()), key


def generate_certs(directory, hosts=DEFAULT_HOSTS, key_type: str = "ec") -> dict:
    """Write a root CA and a server and a client certificate signed by it.

    Files (in ``directory``, created if needed): ``rootCA.pem``,
    ``rootCA-key.pem``, ``server-cert.pem``, ``server-key.pem``,
    ``client-cert.pem``, ``client-key.pem``.  Returns their paths under the
    keys ``ca``, ``ca_key``, ``server_cert``, ``server_key``, ``client_cert``,
    ``client_key``, and under their file names too (``paths["rootCA.pem"]``),
    plus ``dir``.  The server certificate has SANs for
    ``hosts``; both leaf certificates have ``client`` / ``server`` CNs.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    paths = {k: os.path.join(directory, v) for k, v in CERT_FILES.items()}
    ca = generate_ca(key_type=key_type)
    server_cert, server_key = issue_cert(ca, "server", hosts, server=True, client=True, key_type=key_type)
    client_cert, client_key = issue_cert(ca, "client", (), server=False, client=True, key_type=key_type)
    _write_cert(paths["ca"], ca.cert)
    _write_key(paths["ca_key"], ca.key)
    _write_cert(paths["server_cert"], server_cert)
    _write_key(paths["server_key"], server_key)
    _write_cert(paths["client_cert"], client_cert)
    _write_key(paths["client_key"], client_key)
    paths.update({name: paths[key] for key, name in CERT_FILES.items()})
    paths["dir"] = directory
    return paths


def generate_unrelated_ca(directory, prefix: str = "other-", hosts=DEFAULT_HOSTS, key_type: str = "ec") -> dict:
    """A second CA that has nothing to do with :func:`generate_certs`' one,
    with a client and a server certificate of its own, for tests where
    verification must fail (a client trusting the wrong CA; a client
    presenting a certificate the server does not trust).

    Files: ``<prefix>rootCA.pem``, ``<prefix>rootCA-key.pem``,
    ``<prefix>server-cert.pem``, ``<prefix>server-key.pem``,
    ``<prefix>client-cert.pem``, ``<prefix>client-key.pem``; the returned dict
    has the same keys as :func:`generate_certs`' (the file-name keys without
    the prefix).
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    paths = {k: os.path.join(directory, prefix + v) for k, v in CERT_FILES.items()}
    ca = generate_ca("unrelated test root CA", org="somebody else", key_type=key_type)
    server_cert, server_key = issue_cert(ca, "server", hosts, server=True, client=True, key_type=key_type,
                                         org="somebody else")
    client_cert, client_key = issue_cert(ca, "client", (), server=False, client=True, key_type=key_type,
                                         org="somebody else")
    _write_cert(paths["ca"], ca.cert)
    _write_key(paths["ca_key"], ca.key)
    _write_cert(paths["server_cert"], server_cert)
    _write_key(paths["server_key"], server_key)
    _write_cert(paths["client_cert"], client_cert)
    _write_key(paths["client_key"], client_key)
    paths.update({name: paths[key] for key, name in CERT_FILES.items()})
    paths["dir"] = directory
    return paths


def tls_config(paths: dict, verify: bool = False, timeout: float = 2.0, handshake_first: bool = False) -> str:
    """A nats-server ``tls { ... }`` block for the server certificate in
    ``paths`` (from :func:`generate_certs`).  ``verify=True`` requires client
    certificates signed by the CA."""
    q = json.dumps
    lines = [f"  cert_file: {q(paths['server_cert'])}",
             f"  key_file: {q(paths['server_key'])}",
             f"  ca_file: {q(paths['ca'])}",
             f"  timeout: {timeout:g}"]
    if verify:
        lines.append("  verify: true")
    if handshake_first:
        lines.append("  handshake_first: true")
    return "tls {\n" + "\n".join(lines) + "\n}\n"


def client_context(paths: dict | None = None, client_cert: bool = False, ca: str | None = None):
    """An :class:`ssl.SSLContext` for a client trusting ``ca`` (default
    ``paths['ca']``), presenting the client certificate when ``client_cert``."""
    import ssl
    if paths is None and (ca is None or client_cert):
        raise ValueError("client_context: paths (from make_certs) are needed for the CA or the client certificate")
    ctx = ssl.create_default_context(cafile=ca or paths["ca"])  # type: ignore[index]
    if client_cert:
        ctx.load_cert_chain(paths["client_cert"], paths["client_key"])  # type: ignore[index]
    return ctx

