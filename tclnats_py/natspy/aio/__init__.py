"""``nats.aio`` of nats-py 2.x: client, msg, subscription and errors modules."""
