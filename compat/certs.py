"""TLS material for tests: a root CA and server/client certificates for localhost."""

from __future__ import annotations

import datetime
import ipaddress
import os

__all__ = ["generate_certs"]


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec
    return ec.generate_private_key(ec.SECP256R1())


def _write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)


def generate_certs(directory: str, hosts=("localhost", "127.0.0.1", "::1"), ca_name="tclnats test CA") -> dict:
    """Write rootCA.pem, rootCA-key.pem, server-cert.pem, server-key.pem,
    client-cert.pem and client-key.pem into ``directory``; return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = _key()
    ca_name_x = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
    ca = (x509.CertificateBuilder().subject_name(ca_name_x).issuer_name(ca_name_x)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          # key identifiers: Python 3.13's default context verifies with X509_STRICT, which wants them
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    sans = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))

    def leaf(cn, usage):
        key = _key()
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
                .issuer_name(ca_name_x).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        return key, cert

    pem = serialization.Encoding.PEM
    nokey = serialization.NoEncryption()
    pkcs8 = serialization.PrivateFormat.PKCS8
    paths = {}

    def save(name, data):
        p = os.path.join(directory, name)
        _write(p, data)
        paths[name] = p

    save("rootCA.pem", ca.public_bytes(pem))
    save("rootCA-key.pem", ca_key.private_bytes(pem, pkcs8, nokey))
    for role, usage in (("server", [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                        ("client", [ExtendedKeyUsageOID.CLIENT_AUTH])):
        key, cert = leaf(f"tclnats {role}", usage)
        save(f"{role}-cert.pem", cert.public_bytes(pem))
        save(f"{role}-key.pem", key.private_bytes(pem, pkcs8, nokey))
    return paths
