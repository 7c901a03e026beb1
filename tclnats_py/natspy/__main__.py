"""Run a nats-py program on tclnats_py's engine::

    python -m tclnats_py.natspy PROGRAM [ARGS]
    python -m tclnats_py.natspy -m MODULE [ARGS]

Before the program runs, an import hook (:class:`NatsAlias`, first in
``sys.meta_path``) makes ``import nats`` and every ``nats.X`` resolve to
``tclnats_py.natspy`` and ``tclnats_py.natspy.X``, whether or not nats-py is
installed: a ``nats.X`` this package does not have is ModuleNotFoundError,
never nats-py's module.  Only this process (and what it imports) is affected.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys

__all__ = ["NatsAlias", "install", "main"]

_ALIAS = "nats"
_TARGET = "tclnats_py.natspy"


class _AliasLoader(importlib.abc.Loader):
    """Hands out the already imported target module under the alias name."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        # the target module ran when it was imported; nothing more to do
        return None


class NatsAlias(importlib.abc.MetaPathFinder):
    """``nats`` -> ``tclnats_py.natspy``, ``nats.X.Y`` -> ``tclnats_py.natspy.X.Y``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        real = _TARGET + fullname[len(_ALIAS):]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(f"No module named {fullname!r} (tclnats_py's nats-py surface has no "
                                      f"{real})", name=fullname)
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(real),
                                              is_package=found.submodule_search_locations is not None)
        return spec


def install() -> None:
    """Put the hook first in ``sys.meta_path`` and forget any ``nats`` modules
    imported before (idempotent)."""
    if not any(isinstance(f, NatsAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, NatsAlias())
    for name in [n for n in sys.modules if n == _ALIAS or n.startswith(_ALIAS + ".")]:
        mod = sys.modules[name]
        if not getattr(mod, "__name__", "").startswith(_TARGET):
            del sys.modules[name]


_USAGE = "usage: python -m tclnats_py.natspy PROGRAM [ARGS] | -m MODULE [ARGS]"


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        sys.exit(2 if not argv else 0)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            sys.exit(2)
        module = argv[1]
        sys.argv = [module] + argv[2:]
        if sys.path and sys.path[0] != os.getcwd() and sys.path[0] not in ("", "."):
            sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        program = argv[0]
        if not os.path.exists(program):
            print(f"tclnats_py.natspy: no such file: {program}", file=sys.stderr)
            sys.exit(2)
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
        runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
