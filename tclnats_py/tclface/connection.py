"""One ``nats::connection`` of Tcl on the Python side: an engine driven by
the Tcl event loop.

:class:`TclConnection` combines the parts of a connection, each in its own
module over the state of state.py:

- io.py (:class:`ConnectionIO`): the socket channel, reads, writes, TLS,
  timers, the C fast paths; the I/O effects' handlers;
- effects.py (:class:`ConnectionEffects`): ``run``, the dispatch loop, and the
  handlers of the effects the user sees (deliveries, request outcomes,
  status, errors, INFO, pings);
- conn_commands.py (:class:`CoreCommands`): the core ``c_<op>`` commands;
- js_commands.py (:class:`JsCommands`): what the JetStream and service
  objects use, and the ops that make them.

Each part is a class over the one before it in that list (JsCommands over
CoreCommands over ConnectionEffects over ConnectionIO over ConnectionState),
so a part calls the parts below it; the one call upwards is the I/O events'
``run()``, which carries out the effects a read, a timer or a write caused.

The engine's effects go through one table per connection, built here once
(:func:`~tclnats_py.engine.driver.effect_table`: a handler missing from the
parts fails the build; run() raises UnknownEffect for a class not in it).  The Tcl
commands go through the class's table (tclface/commands.py).  Neither entry
point raises into Tcl: a Python exception in a Tcl command would be
re-raised later in the Tcl host's main loop, so errors are returned as values
and thrown by the Tcl layer.
"""

from __future__ import annotations

import functools
import sys

from tclnats_py._tclcross import TclError
from tclnats_py.engine.driver import effect_table
from tclnats_py.errors import NatsError
from tclnats_py.tclface.commands import tcl_commands, unknown_op
from tclnats_py.tclface.convert import format_exc
from tclnats_py.tclface.js_commands import JsCommands
from tclnats_py.tclface.results import error_reply, reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tclnats_py.tclface.bridge import _Bridge

__all__ = ["TclConnection"]


@tcl_commands
class TclConnection(JsCommands):
    """One ``nats::connection``: an engine plus the Tcl-side I/O."""

    def __init__(self, bridge: _Bridge, obj: str, ns: str, log_level: str):
        super().__init__(bridge, obj, ns, log_level)
        # effect class -> bound handler, built once (a plain dict: CPython
        # specializes the subscript of exact dicts only)
        self.effects: dict = effect_table(self)
        self.tk.createcommand(self.cmd, functools.partial(self.call, self))
        self.tk.createcommand(self.cmd + "_ev", self.event)
        self.tk.createcommand(self.cmd + "_rd", self.on_readable)
        self.tk.createcommand(self.cmd + "_rx", self.rx)

    def call(self, obj, op, *args):
        """Entry from Tcl: ``obj.c_<op>(*args)``, looked up in the table of
        obj's class (tclface/commands.py; the commands of this
        connection and of its JetStream objects, each a functools.partial of
        this method, no closure per call).  Returns ``{0 result}``,
        ``{1 errorcode message}``, or ``{2 rid}`` when the result will come
        from another request."""
        try:
            if self.tcl_pending:
                self.drain_tcl_pubs()
            fn = obj._tcl_commands.get(op)
            if fn is None:
                raise unknown_op(obj, op)
            result = fn(obj, *args)
        except NatsError as e:
            self.run()
            return error_reply(e)
        except TclError as e:
            return (1, ("NATS", "ErrInternal"), f"Tcl error in tclnats_py: {e}")
        except Exception as e:
            return self._internal_error(op, e)
        return reply(result)

    def event(self, op, *args):
        """Entry for channel events and timers (nobody to return an error to)."""
        try:
            getattr(self, "e_" + op)(*args)
        except Exception:
            tb = format_exc()
            self._log("error", f"internal error in {op} event: {tb}")
            sys.stderr.write(tb)
