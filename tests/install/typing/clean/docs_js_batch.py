"""docs/python.md: atomic batches (type-checked as users write them)."""

from dataclasses import dataclass

from tclnats_py.aio.jetstream import JetStream


@dataclass
class Order:
    id: int
    data: bytes


async def publish_orders(js: JetStream, orders: list[Order]) -> None:
    ack = await js.publish_batch([("orders.1", b"apple"), ("orders.2", b"pear", {"Nats-Msg-Id": "o-2"})])
    print(ack.batch_id, ack.batch_size, ack.stream, ack.seq)  # seq: the batch's last message
    async with js.batch() as b:                             # message by message; commits when the block ends,
        for o in orders:                                    # is given up when it raises (nothing stored)
            await b.add(f"orders.{o.id}", o.data)
    assert b.ack is not None                                # None: nothing was added, nothing committed
    print(b.ack.batch_size)
