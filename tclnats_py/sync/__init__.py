"""The blocking driver of the engine: one socket, no event loop, no thread.

:class:`~tclnats_py.sync.driver.Driver` carries out the engine's effects
(:mod:`tclnats_py.engine.driver`) with a plain blocking socket: it connects,
lets the engine do the whole handshake, and reads while its caller waits for
something (a request's reply, a flush, the next message of a subscription),
firing the engine's timers meanwhile.  The Spark source's reader runs on it
(:mod:`tclnats_py.spark.reader`).  The public blocking client (issue 35:
``tclnats_py.sync.connect`` with the asyncio face's options, names and
errors) is to be built on this driver; it is not here yet.
"""
