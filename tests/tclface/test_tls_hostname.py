"""The Tcl face checks the server's certificate against the host name.

TclTLS verifies the chain (-require 1, our default) but not the name; the
driver does that after the handshake (tclnats_py.tclface.tlsname).  Real nats-servers
with certificates issued at test time for chosen names; the Python face's
ssl module already checks names, and is checked here alongside.
"""

from __future__ import annotations

import asyncio
import os
import tkinter

import pytest

import tclnats_py
from tclnats_py.tclface.tlsname import host_matches
from tclnats_py.testing.server import NatsServer, free_port
from tclnats_py.tclface.bridge import install
from tclnats_py.testing import certs as C

pytestmark = pytest.mark.tcl


# ------------------------------------------------------------ the matching rules

@pytest.mark.parametrize("host,dns,ips,cns,ok", [
    ("localhost", ["localhost"], [], [], True),
    ("LocalHost.", ["localhost"], [], [], True),
    ("localhost", ["other.example"], [], [], False),
    ("a.example.com", ["*.example.com"], [], [], True),
    ("a.b.example.com", ["*.example.com"], [], [], False),    # one label only
    ("example.com", ["*.example.com"], [], [], False),
    ("x.com", ["*.com"], [], [], False),                      # never for a top-level domain
    ("ab.example.com", ["a*.example.com"], [], [], False),    # partial-label wildcards are refused
    ("127.0.0.1", [], ["127.0.0.1"], [], True),
    ("127.0.0.1", ["127.0.0.1"], [], [], False),              # an address needs an IP SAN
    ("::1", [], ["0:0:0:0:0:0:0:1"], [], True),
    ("[::1]", [], ["::1"], [], True),
    ("10.0.0.1", [], ["127.0.0.1"], [], False),
    ("server", [], [], ["server"], True),                     # CN only without SANs
    ("server", ["localhost"], [], ["server"], False),
])
def test_host_matches(host, dns, ips, cns, ok):
    assert host_matches(host, dns, ips, cns) is ok


# ------------------------------------------------------------ real servers, Tcl face

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("tlsname")
    ca = C.generate_ca()
    ca_path = os.path.join(d, "ca.pem")
    C._write_cert(ca_path, ca.cert)

    def server_with(hosts, name):
        cert, key = C.issue_cert(ca, name, hosts)
        paths = {"server_cert": os.path.join(d, f"{name}-cert.pem"),
                 "server_key": os.path.join(d, f"{name}-key.pem"), "ca": ca_path}
        C._write_cert(paths["server_cert"], cert)
        C._write_key(paths["server_key"], key)
        return paths
    return ca_path, server_with


def tcl_connect(url, tls_opts):
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    tk.eval("package require nats")
    tk.call("set", "::url", url)
    tk.call("set", "::tls_opts", tls_opts)
    tk.eval("""
        set c [nats::connection new tlsname -log_chan stderr -log_level error]
        $c configure -servers $::url -tls_opts $::tls_opts -connect_timeout 2000
    """)
    try:
        tk.eval("$c connect")
        return "connected", tk
    except tkinter.TclError as e:
        code = tk.eval("set ::errorCode")
        return f"{code}: {e}", tk


@pytest.mark.parametrize("hosts,connect_host,opts,expect", [
    (["localhost"], "localhost", [], "connected"),
    (["localhost"], "127.0.0.1", [], "ErrTLS"),                  # the name is not in the certificate
    (["127.0.0.1"], "127.0.0.1", [], "connected"),
    (["other.example"], "localhost", [], "ErrTLS"),
    (["other.example"], "127.0.0.1", ["-servername", "other.example"], "connected"),
    (["other.example"], "localhost", ["-require", "0"], "connected"),   # verification turned off
])
def test_tcl_face_checks_the_name(pki, hosts, connect_host, opts, expect):
    ca_path, server_with = pki
    paths = server_with(hosts, "_".join(h.replace(".", "-") for h in hosts))
    with NatsServer(config=C.tls_config(paths), tls=True) as srv:
        outcome, tk = tcl_connect(f"tls://{connect_host}:{srv.port}", ["-cafile", ca_path, *opts])
        try:
            assert expect in outcome
            if expect == "connected":
                assert tk.eval("$c ping") == "true"
            else:
                assert "does not name" in outcome
        finally:
            tk.eval("$c destroy")


def test_python_face_checks_the_name_too(pki):
    ca_path, server_with = pki
    paths = server_with(["localhost"], "py-localhost")
    import ssl
    ctx = ssl.create_default_context(cafile=ca_path)
    with NatsServer(config=C.tls_config(paths), tls=True) as srv:
        async def go(host):
            c = await tclnats_py.connect(f"tls://{host}:{srv.port}", tls=ctx,
                                         connect_timeout=2)
            await c.close()
        asyncio.run(go("localhost"))
        with pytest.raises(tclnats_py.NatsError) as e:
            asyncio.run(go("127.0.0.1"))
        assert e.value.code == "ErrTLS" or "ErrTLS" in str(e.value)
        assert "127.0.0.1" in str(e.value)


# ------------------------------------------------------------ discovered servers

def test_tcl_face_checks_a_discovered_address_against_the_configured_name(pki):
    """A cluster announces its members by address (INFO connect_urls) while
    its certificates name hosts: after failing over to a member known only
    by address, the certificate is checked against the host name the user
    configured (nats.go's rule), so the reconnection succeeds; the address
    itself is not in the certificate."""
    ca_path, server_with = pki
    paths = server_with(["localhost"], "cluster-localhost")
    cports = [free_port(), free_port()]
    nodes = [NatsServer(config=C.tls_config(paths), tls=True, name=f"tls{i}",
                        args=["--cluster_name", "tlsname", "--cluster", f"nats://127.0.0.1:{cp}",
                              "--routes", ",".join(f"nats://127.0.0.1:{p}" for p in cports if p != cp)])
             for i, cp in enumerate(cports)]
    tk = None
    try:
        for n in nodes:
            n.start()
        outcome, tk = tcl_connect(f"tls://localhost:{nodes[0].port}", ["-cafile", ca_path])
        assert outcome == "connected"
        tk.eval("""
            $c configure -reconnect_time_wait 100 -max_reconnect_attempts 20
            proc wait_for {cond ms} {
                set deadline [expr {[clock milliseconds] + $ms}]
                while {![uplevel #0 [list expr $cond]]} {
                    if {[clock milliseconds] > $deadline} { return 0 }
                    after 20 {set ::tick 1}; vwait ::tick
                }
                return 1
            }
        """)
        # the other member comes in INFO, by address
        assert tk.eval(f'wait_for {{[lsearch [$c all_servers] *{nodes[1].port}*] >= 0}} 5000') == "1"
        nodes[0].stop()
        assert tk.eval(f'wait_for {{[$c cget -status] eq "connected" && '
                       f'[lindex [$c current_server] 1] == {nodes[1].port}}} 10000') == "1", \
            tk.eval("list [$c cget -status] [$c current_server] [set [info object namespace $c]::last_error]")
        assert tk.eval("lindex [$c current_server] 0") == "127.0.0.1"
        assert tk.eval("$c ping") == "true"
    finally:
        if tk is not None:
            tk.eval("$c destroy")
        for n in nodes:
            n.cleanup()


def test_python_face_checks_a_discovered_address_against_the_configured_name(pki):
    """The same rule on the Python face (it lives in the server pool): after
    failing over to a cluster member known only by its address, the
    certificate is checked against the configured host name."""
    import ssl
    ca_path, server_with = pki
    paths = server_with(["localhost"], "pycluster-localhost")
    cports = [free_port(), free_port()]
    nodes = [NatsServer(config=C.tls_config(paths), tls=True, name=f"pytls{i}",
                        args=["--cluster_name", "pytlsname", "--cluster", f"nats://127.0.0.1:{cp}",
                              "--routes", ",".join(f"nats://127.0.0.1:{p}" for p in cports if p != cp)])
             for i, cp in enumerate(cports)]

    async def go():
        ctx = ssl.create_default_context(cafile=ca_path)
        nc = await tclnats_py.connect(f"tls://localhost:{nodes[0].port}", tls=ctx, connect_timeout=2,
                                      reconnect_time_wait=0.1, max_reconnect_attempts=20)
        try:
            for _ in range(250):
                if any(s["port"] == nodes[1].port for s in nc.all_servers):
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError(f"member not discovered: {nc.all_servers}")
            nodes[0].stop()
            for _ in range(500):
                if nc.is_connected and nc.current_server == ("127.0.0.1", nodes[1].port):
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError((nc.status, nc.current_server, nc.last_error))
            await nc.flush(timeout=2)
        finally:
            await nc.close()
    try:
        for n in nodes:
            n.start()
        asyncio.run(go())
    finally:
        for n in nodes:
            n.cleanup()
