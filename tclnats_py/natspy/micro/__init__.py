"""``nats.micro`` of nats-py 2.x: NATS services (ADR-32) on tclnats_py.

``svc = await add_service(nc, name="adder", version="1.0.0")`` then
``await svc.add_endpoint(name="add", handler=handle)``; the service answers
PING, INFO and STATS on the ``$SRV`` control subjects.  Subjects, payloads,
checks and counters are the engine's (``tclnats_py.engine.micro``); this
package runs them on the natspy client.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tclnats_py.natspy.micro.request import Handler, Request
from tclnats_py.natspy.micro.service import Service, ServiceConfig

__all__ = ["add_service", "Service", "ServiceConfig", "Request", "Handler"]


async def add_service(nc: Any, config: ServiceConfig | None = None, **kwargs: Any) -> Service:
    """Create a service on the connection ``nc`` and start it (its control subscriptions)."""
    config = replace(config, **kwargs) if config else ServiceConfig(**kwargs)
    service = Service(nc, config)
    await service.start()
    return service
