"""The Python guide's WebSocket block, typed."""

from __future__ import annotations

import tclnats_py

async def over_websocket() -> None:
    nc = await tclnats_py.connect("wss://nats.example.com/nats", tls_ca="ca.pem",
                                  proxy="http://proxy.example.com:3128",
                                  ws_headers={"Authorization": "Bearer s3cret"})
    await nc.publish("greet", b"hello over WebSocket")
    await nc.close()
