"""The Tcl commands of the Python side of an object, as an explicit table.

Each Tcl object that nats.tcl drives through Python (a connection, a
JetStream context, a KV bucket, an object store, a pull request, an ordered
consumer, a KV watcher, a service) is one Tcl command, ``$Py op ?arg ...?``,
whose ops are the ``c_<op>`` methods of its Python class.  :func:`tcl_commands`
turns those methods into the class's table once, when the class is created:
``_tcl_commands`` (op -> function, called as ``function(obj, *args)``) and
``_tcl_arity`` (op -> (least, most) arguments; most is None for ``*args``),
which :meth:`TclConnection.call <tclnats_py.tclface.connection.TclConnection.call>`
looks up instead of building a method name per call.
"""

from __future__ import annotations

__all__ = ["tcl_commands", "unknown_op"]


def _arity(fn) -> tuple:
    code = fn.__code__
    n = code.co_argcount - 1  # without self
    least = n - len(fn.__defaults__ or ())
    return (least, None if code.co_flags & 0x04 else n)  # 0x04: CO_VARARGS


def tcl_commands(cls):
    """Class decorator: build ``cls._tcl_commands`` and ``cls._tcl_arity``
    from the ``c_<op>`` functions of the class and of its bases."""
    table: dict = {}
    arity: dict = {}
    for klass in reversed(cls.__mro__):
        for name, fn in vars(klass).items():
            if name.startswith("c_") and callable(fn):
                table[name[2:]] = fn
                arity[name[2:]] = _arity(fn)
    cls._tcl_commands = table
    cls._tcl_arity = arity
    return cls


def unknown_op(obj, op: str) -> AttributeError:
    """The error of an op that the object's table lacks (the message that
    the attribute lookup of the method gave before the table)."""
    return AttributeError(f"'{type(obj).__name__}' object has no attribute 'c_{op}'")
