"""Does a server certificate name the host we connected to? (RFC 6125)

The Tcl face does TLS with TclTLS, which checks the certificate chain but not
the name in it; the driver asks this module afterwards, with the certificate
TclTLS hands over as PEM.  The rules are the usual ones:

- a host that is an IP address must equal one of the certificate's IP address
  subjectAltNames;
- a DNS name must equal a DNS subjectAltName (case-insensitive, a trailing dot
  ignored), or match one whose left-most label is exactly ``*`` (one label,
  never the last two);
- the subject's common name counts only when the certificate has no DNS or IP
  subjectAltName at all.
"""

from __future__ import annotations

import os

from tclnats_py.engine.pool import is_ip_address

from tclnats_py.errors import make_error

__all__ = ["names_in", "host_matches", "check_server_name", "is_ip_address"]


def names_in(pem: str) -> tuple[list[str], list[str], list[str]]:
    """(DNS names, IP addresses, common names) of a PEM certificate."""
    import ssl  # here: a Tcl interpreter that never uses TLS starts without ssl
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(pem)
        decoded = ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined]  # the stdlib's own X.509 decoder
    except (ssl.SSLError, OSError, ValueError) as e:
        raise make_error("ErrTLS", f"Cannot read the server's certificate: {e}") from None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    dns, ips, cns = [], [], []
    for kind, value in decoded.get("subjectAltName", ()):
        if kind == "DNS":
            dns.append(value)
        elif kind == "IP Address":
            ips.append(value.strip())
    for rdn in decoded.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                cns.append(value)
    return dns, ips, cns


def _ip(text: str):
    import ipaddress  # here: only a TLS connection asks
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _dns_match(pattern: str, host: str) -> bool:
    pattern = pattern.lower().rstrip(".")
    host = host.lower().rstrip(".")
    if not pattern or not host:
        return False
    if "*" not in pattern:
        return pattern == host
    first, _, rest = pattern.partition(".")
    if first != "*" or "*" in rest or rest.count(".") < 1:
        return False  # only a whole left-most label, and not for a top-level domain
    label, dot, tail = host.partition(".")
    return bool(label) and bool(dot) and tail == rest


def host_matches(host: str, dns: list[str], ips: list[str], cns: list[str]) -> bool:
    addr = _ip(host)
    if addr is not None:
        return any(_ip(v) == addr for v in ips)
    if dns or ips:
        return any(_dns_match(p, host) for p in dns)
    return any(_dns_match(p, host) for p in cns)


def check_server_name(pem: str, host: str) -> None:
    """ErrTLS unless the certificate ``pem`` names ``host``."""
    dns, ips, cns = names_in(pem)
    if not host_matches(host, dns, ips, cns):
        shown = ", ".join([f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips]) or \
            ", ".join(f"CN={c}" for c in cns) or "no names"
        raise make_error("ErrTLS", f"The server's certificate does not name {host} ({shown})")
