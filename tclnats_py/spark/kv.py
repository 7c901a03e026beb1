"""A Key-Value bucket as a table (format "jetstream-kv"): its current
entries, or every revision, read by the asyncio face in one task and handed
to Spark's plain iterator through ``_collect``.
"""

from __future__ import annotations

import asyncio
import datetime
import logging

from pyspark.sql.datasource import DataSourceReader, InputPartition

from tclnats_py.errors import NatsError, make_error
from tclnats_py.spark import options as O
from tclnats_py.spark.read import _unreachable
from tclnats_py.spark.workers import _Shipped

log = logging.getLogger("tclnats_py.spark")


def _collect(agen_factory, buffer: int = 256):
    """Items of an async generator, consumed from a plain iterator.

    The event loop runs in its own thread; items cross through an
    asyncio.Queue that the loop awaits (it never blocks its own loop) and the
    consuming thread reads with run_coroutine_threadsafe.  Closing the
    iterator early cancels the producer, which closes the generator (and so
    its connection) before the loop stops."""
    import threading
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, name="tclnats-spark-read", daemon=True)
    t.start()
    done = object()

    async def produce(q):
        agen = agen_factory()
        try:
            async for r in agen:
                await q.put(r)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # handed to the consuming thread
            await q.put((done, e))
            return
        finally:
            await agen.aclose()
        await q.put((done, None))

    async def start():
        q = asyncio.Queue(buffer)
        return q, asyncio.ensure_future(produce(q))

    async def stop(task):
        if not task.done():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except BaseException as e:  # the producer failed on its way out: say so, it is not lost
            log.warning("the reader's producer ended with %r", e)
        await loop.shutdown_asyncgens()

    q, task = asyncio.run_coroutine_threadsafe(start(), loop).result()
    try:
        while True:
            r = asyncio.run_coroutine_threadsafe(q.get(), loop).result()
            if isinstance(r, tuple) and len(r) == 2 and r[0] is done:
                if r[1] is not None:
                    raise r[1]
                break
            yield r
    finally:
        try:
            asyncio.run_coroutine_threadsafe(stop(task), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            t.join(10)
            loop.close()


async def _kv_connect(settings):
    import tclnats_py
    try:
        c = await tclnats_py.connect(settings.servers, **settings.connect_kwargs())
    except NatsError as e:
        raise _unreachable(settings, e) from None
    return c, c.jetstream(domain=settings.domain, api_prefix=settings.api_prefix)


class _KvReader(_Shipped, DataSourceReader):
    def __init__(self, opts):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.history = O.opt_bool(opts, "history", False)
        self.bucket = opts.get("bucket")
        if not self.bucket:
            raise make_error("ErrInvalidArg", "option 'bucket' is required")

        async def check():
            c, js = await _kv_connect(self.settings)
            try:
                await js.key_value(self.bucket)
            finally:
                await c.close()
        asyncio.run(check())

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        history, settings, bucket = self.history, self.settings, self.bucket

        async def entries():
            c, js = await _kv_connect(settings)
            try:
                kv = await js.key_value(bucket)
                agen = kv.watch(">", include_history=history)
                try:
                    async for e in agen:
                        if e is None:
                            break
                        yield (e.key, e.value, e.revision, e.operation,
                               datetime.datetime.fromtimestamp(e.created / 1000, datetime.timezone.utc))
                finally:
                    await agen.aclose()
            finally:
                await c.close()
        yield from _collect(entries)
