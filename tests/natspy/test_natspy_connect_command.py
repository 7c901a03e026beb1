"""natspy's ``Client._connect_command`` (a nats-py private that programs wrap
to see or change their CONNECT): the line the engine sends, asked for once
per connection attempt, with a token beside the signed nonce as nats-py
sends it."""

import asyncio
import json

import pytest

from tclnats_py import natspy
from tclnats_py.natspy.aio.client import Client as NATS


def _fields(line: bytes) -> dict:
    assert line.startswith(b"CONNECT ") and line.endswith(b"\r\n")
    return json.loads(line[len(b"CONNECT "):-2])


def test_connect_command_before_connect_follows_options():
    nc = NATS()
    nc.options.update(verbose=False, pedantic=True, name="probe", no_echo=True)
    f = _fields(nc._connect_command())
    assert (f["verbose"], f["pedantic"], f["name"], f["echo"], f["protocol"]) == (False, True, "probe", False, 1)
    assert not {"jwt", "sig", "auth_token", "user", "pass"} & set(f)


def test_connect_command_is_asked_once_and_carries_token_beside_signature(creds_server):
    srv, creds = creds_server

    async def main():
        nc = NATS()
        lines = []
        own = nc._connect_command

        def spy():
            lines.append(own())
            return lines[-1]
        nc._connect_command = spy
        await nc.connect(srv.url, user_credentials=creds, token="beside", name="cc", allow_reconnect=False)
        assert nc.is_connected
        assert len(lines) == 1
        f = _fields(lines[0])
        assert f["auth_token"] == "beside" and f["jwt"] and f["sig"] and f["name"] == "cc"
        await nc.flush()
        await nc.close()
    asyncio.run(main())


def test_connect_command_wrapper_decides_what_is_sent(creds_server):
    """A wrapper that drops the signature: the server refuses the CONNECT the
    engine sent, so the wrapper's line went on the wire."""
    srv, creds = creds_server

    async def main():
        nc = NATS()
        own = nc._connect_command

        def unsigned():
            f = _fields(own())
            del f["sig"]
            return b"CONNECT " + json.dumps(f).encode() + b"\r\n"
        nc._connect_command = unsigned
        with pytest.raises(natspy.errors.Error):
            await nc.connect(srv.url, user_credentials=creds, allow_reconnect=False, connect_timeout=2)
        await nc.close()
    asyncio.run(main())
