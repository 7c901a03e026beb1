"""The public names of the installed nats-py against tclnats_py's nats-py
surface (``tclnats_py.natspy``), listing what nats-py has and we lack.

    python -m tclnats_py.compat.natspy_names [--json REPORT.json] [--version 2.16.0] [--python PY]

Two child processes import the two packages under the same name, ``nats``:

* nats-py: plain ``import nats`` (the one installed beside this Python;
  refused unless it is nats-py's own files at the expected version);
* ours: with ``tclnats_py.natspy``'s import alias installed, as
  ``python -m tclnats_py.natspy`` runs a program.

The first walks nats-py's modules and describes every public name a module
defines or re-exports from nats-py: modules, classes (constructor
parameters, dataclass fields, enum members, public methods with their
parameters, properties, class constants, nested classes), functions with
their parameters, and module constants.  The second looks every one of them
up in ours.  Reported as missing: a module, name, member, field or enum
member we lack, a parameter name of a nats-py function or method that ours
does not take by that name, and a ``*args``/``**kwargs`` that ours does not
accept.  The modules in :data:`NOT_COMPARED` are nats-py's wire internals
(its parser bound to its own client, its socket transports), which a nats-py
program does not call, and the classes in :data:`INIT_NOT_COMPARED` are ones
only the client constructs: those modules and constructors are named in the
output, never compared.

Exit code 0 when nothing is missing, 1 when something is, 2 when a side
could not be read (no nats-py, the wrong version, an import failure).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

__all__ = ["main", "compare", "NOT_COMPARED", "INIT_NOT_COMPARED", "VERSION"]

#: the nats-py release natspy stands in for
VERSION = "2.16.0"

#: nats-py modules left out of the comparison, with the reason printed
NOT_COMPARED = {
    "nats.protocol": "nats-py's wire layer (tclnats_py's is engine/protocol.py)",
    "nats.protocol.parser": "nats-py's protocol parser, driving its own Client's private callbacks",
    "nats.protocol.command": "nats-py's wire encoders (tclnats_py's are engine/protocol.py)",
    "nats.aio.transport": "nats-py's socket and WebSocket transports (tclnats_py's driver owns the socket)",
}

#: classes whose constructor parameters are not compared: the client builds
#: them from its own state and hands them out, a program never calls them
INIT_NOT_COMPARED = {
    "nats.aio.subscription.Subscription": "made by Client.subscribe",
    "nats.js.client.JetStreamContext.PushSubscription": "made by JetStreamContext.subscribe",
    "nats.micro.service.Endpoint": "made by Service.add_endpoint and Group.add_endpoint",
    "nats.micro.service.Group": "made by Service.add_group and Group.add_group",
}

# The child's program: describe (side "theirs") or look up (side "ours").
# It is run with ``python -c`` so that each side has a fresh interpreter.
_CHILD = r'''
import ast, dataclasses, enum, importlib, inspect, json, pkgutil, sys

side, version, not_compared = sys.argv[1], sys.argv[2], set(json.loads(sys.argv[3]))
CONSTANT_TYPES = (int, float, str, bytes, bool, tuple, frozenset, list, dict, set, type(None))


def params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            out.append("*")
        elif p.kind is p.VAR_KEYWORD:
            out.append("**")
        else:
            out.append(p.name)
    return out


def in_nats(obj):
    """Whether obj was defined in the nats package."""
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "nats"


def raw_member(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass, vars(klass)[name]
    return None, None


def describe_class(cls, depth=0):
    d = {"kind": "class", "init": params(cls.__init__) if "__init__" in dir(cls) else None,
         "origin": f"{cls.__module__}.{cls.__qualname__}"}
    if dataclasses.is_dataclass(cls):
        d["fields"] = [f.name for f in dataclasses.fields(cls)]
    if isinstance(cls, enum.EnumMeta):
        d["enum"] = [m for m in cls.__members__]
    members = {}
    fields = set(d.get("fields", ())) | set(d.get("enum", ()))
    for name in dir(cls):
        if name.startswith("_") or name in fields:
            continue
        owner, raw = raw_member(cls, name)
        if owner is None or not in_nats(owner):
            continue
        if isinstance(raw, property):
            members[name] = {"kind": "property"}
        elif isinstance(raw, (staticmethod, classmethod)):
            members[name] = {"kind": "function", "params": params(getattr(cls, name))}
        elif inspect.isfunction(raw):
            members[name] = {"kind": "function", "params": params(raw)[1:] if params(raw) else params(raw)}
        elif inspect.isclass(raw):
            members[name] = describe_class(raw, depth + 1) if depth < 2 else {"kind": "class"}
        elif not callable(raw):
            members[name] = {"kind": "value"}
    d["members"] = members
    return d


def describe(obj):
    if inspect.ismodule(obj):
        return {"kind": "module"}
    if inspect.isclass(obj):
        return describe_class(obj)
    if callable(obj):
        return {"kind": "function", "params": params(obj)}
    return {"kind": "value"}


def defined_at_top(mod):
    """Names a module's own source binds at its top level (not imports)."""
    try:
        tree = ast.parse(inspect.getsource(mod))
    except (OSError, TypeError):
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def public(mod, is_pkg):
    """A module's public names: those it defines or lists in __all__, and
    for a package also what it imports from its own submodules."""
    here = mod.__name__
    own = defined_at_top(mod) | set(getattr(mod, "__all__", ()))
    names = {}
    for name, obj in vars(mod).items():
        if name.startswith("_"):
            continue
        origin = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None) or ""
        mine = name in own or (inspect.ismodule(obj) or is_pkg) and origin.startswith(here + ".")
        if not mine or origin in not_compared:
            continue
        if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj):
            names[name] = describe(obj)
        elif isinstance(obj, CONSTANT_TYPES):
            names[name] = {"kind": "value"}
    return names


def theirs():
    import importlib.metadata
    import nats
    where = nats.__file__ or ""
    dist = importlib.metadata.version("nats-py")
    if "tclnats_py" in where or dist != version:
        print(json.dumps({"error": f"nats is {where} (nats-py {dist}), not nats-py {version}"}))
        return
    spec = {}
    for info in pkgutil.walk_packages(nats.__path__, "nats."):
        if info.name in not_compared or any(info.name.startswith(n + ".") for n in not_compared):
            continue
        spec[info.name] = public(importlib.import_module(info.name), info.ispkg)
    spec["nats"] = public(nats, True)
    print(json.dumps({"file": where, "spec": spec}))


def lookup(obj, want):
    """Describe obj the way ``want`` (theirs) is described, member by member."""
    d = describe(obj) if not inspect.isclass(obj) else {"kind": "class"}
    if inspect.isclass(obj):
        d["init"] = params(obj.__init__)
        if dataclasses.is_dataclass(obj):
            d["fields"] = [f.name for f in dataclasses.fields(obj)]
        elif want.get("fields"):
            # a plain class (an exception) serves a nats-py dataclass field as a
            # constructor parameter, an annotated or a class attribute
            known = set(d["init"] or ()) | {n for k in obj.__mro__ for n in getattr(k, "__annotations__", {})}
            d["fields"] = [f for f in want["fields"] if f in known or hasattr(obj, f)]
        d["enum"] = list(getattr(obj, "__members__", {}) or ())
        members = {}
        for name, w in (want.get("members") or {}).items():
            if hasattr(obj, name):
                member = inspect.getattr_static(obj, name)
                if isinstance(member, (staticmethod, classmethod)) or inspect.isclass(member):
                    member = getattr(obj, name)
                if inspect.isfunction(member) and w.get("kind") == "function":
                    p = params(member)
                    members[name] = {"kind": "function", "params": p[1:] if p else p}
                elif inspect.isclass(member):
                    members[name] = lookup(member, w)
                else:
                    members[name] = describe(member) if not isinstance(member, property) else {"kind": "property"}
        d["members"] = members
    return d


def ours(spec):
    from tclnats_py.natspy.__main__ import install
    install()
    found = {}
    for modname, names in spec.items():
        try:
            mod = importlib.import_module(modname)
        except ImportError as exc:
            print(f"{modname}: {exc!r}", file=sys.stderr)
            continue
        have = {}
        for n, w in names.items():
            if w["kind"] == "module" and not hasattr(mod, n):
                try:
                    importlib.import_module(f"{modname}.{n}")
                except ImportError:
                    continue
            if hasattr(mod, n):
                have[n] = lookup(getattr(mod, n), w)
        found[modname] = have
    print(json.dumps({"file": sys.modules["nats"].__file__, "spec": found}))


if side == "theirs":
    theirs()
else:
    ours(json.load(sys.stdin))
'''


def _child(python: str, side: str, version: str, stdin: str | None = None) -> dict[str, Any]:
    """Run one side's child and read its JSON, or say why it could not run."""
    cmd = [python, "-c", _CHILD, side, version, json.dumps(sorted(NOT_COMPARED))]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return {"error": f"{side}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"{side}: no report in its output: {proc.stdout[-2000:]!r} {proc.stderr[-2000:]!r}"}


def _missing_params(path: str, want: list[str] | None, have: list[str] | None, out: list[str]) -> None:
    if want is None or have is None:
        return
    lacking = [p for p in want if p not in have]
    if lacking:
        shown = ", ".join("*args" if p == "*" else "**kwargs" if p == "**" else p for p in lacking)
        out.append(f"{path}: parameter {shown}")


def _compare_class(path: str, want: dict, have: dict, out: list[str]) -> None:
    if want.get("origin") not in INIT_NOT_COMPARED:
        _missing_params(f"{path}()", want.get("init"), have.get("init"), out)
    for key, what in (("fields", "field"), ("enum", "member")):
        lacking = [n for n in want.get(key) or () if n not in (have.get(key) or ())]
        if lacking:
            out.append(f"{path}: {what} {', '.join(lacking)}")
    have_members = have.get("members") or {}
    for name, w in sorted((want.get("members") or {}).items()):
        _compare(f"{path}.{name}", w, have_members.get(name), out)


def _compare(path: str, want: dict, have: dict | None, out: list[str]) -> None:
    if have is None:
        out.append(f"{path}: {want['kind']} missing")
    elif want["kind"] == "class":
        _compare_class(path, want, have, out)
    elif want["kind"] == "function":
        _missing_params(f"{path}()", want.get("params"), have.get("params"), out)


def compare(theirs: dict[str, dict], ours: dict[str, dict]) -> list[str]:
    """Every name, member, field and parameter of ``theirs`` that ``ours``
    lacks, one line each (``module.Name.member: what``)."""
    out: list[str] = []
    for modname in sorted(theirs):
        if modname not in ours:
            out.append(f"{modname}: module missing")
            continue
        for name, want in sorted(theirs[modname].items()):
            _compare(f"{modname}.{name}", want, ours[modname].get(name), out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tclnats_py.compat.natspy_names",
                                 description="nats-py's public names that tclnats_py.natspy lacks")
    ap.add_argument("--version", default=VERSION, help=f"the nats-py version expected (default {VERSION})")
    ap.add_argument("--python", default=sys.executable, help="the Python whose nats-py is read")
    ap.add_argument("--json", help="write the report as JSON to this file")
    args = ap.parse_args(argv)
    theirs = _child(args.python, "theirs", args.version)
    if "error" in theirs:
        print(f"natspy_names: cannot read nats-py: {theirs['error']}", file=sys.stderr)
        return 2
    ours = _child(args.python, "ours", args.version, json.dumps(theirs["spec"]))
    if "error" in ours:
        print(f"natspy_names: cannot read tclnats_py.natspy: {ours['error']}", file=sys.stderr)
        return 2
    missing = compare(theirs["spec"], ours["spec"])
    total = sum(len(names) for names in theirs["spec"].values())
    print(f"nats-py {args.version}: {theirs['file']}")
    print(f"ours: {ours['file']}")
    print(f"{len(theirs['spec'])} modules, {total} public names compared")
    for modname, why in sorted(NOT_COMPARED.items()):
        print(f"not compared: {modname} ({why})")
    for cls, why in sorted(INIT_NOT_COMPARED.items()):
        print(f"constructor not compared: {cls} ({why})")
    for line in missing:
        print(f"missing: {line}")
    print(f"{len(missing)} missing" if missing else "nothing missing")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"version": args.version, "missing": missing, "not_compared": NOT_COMPARED}, fh, indent=1)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
