"""The package layout keeps the architecture: no import circle between
tclnats_py's modules, the top-level import loads neither the Tcl face, nor
Spark, nor the asyncio JetStream, and JetStream wire subjects live only in
the engine's js folder."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import tclnats_py

PKG = pathlib.Path(tclnats_py.__file__).parent


def _modules():
    mods = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        if name.startswith(("tclnats_py.compat", "tclnats_py.tcl")):
            continue  # shipped from the repository's compat/ and tcl/
        mods[name] = path
    return mods


def _type_checking_nodes(tree):
    """The nodes under ``if TYPE_CHECKING:`` (imports for annotations only: never run)."""
    skip = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING":
            skip.update(id(x) for x in ast.walk(n))
    return skip


def _graph(mods, lazy=True):
    """Imports between our modules: at module level, and with ``lazy`` also
    those inside functions (they run when the function is first called);
    ``importlib.import_module("tclnats_py...")`` with a literal name counts."""
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        nodes = ast.walk(tree) if lazy else (n for top in tree.body for n in
                                              ([top] if not isinstance(top, (ast.If, ast.Try)) else ast.walk(top)))
        for n in nodes:
            if id(n) in skip:
                continue
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("tclnats_py"):
                subs = {f"{n.module}.{a.name}" for a in n.names} & mods.keys()
                edges[m] |= subs
                if n.module in mods and len(subs) < len(n.names) and not m.startswith(n.module + "."):
                    edges[m].add(n.module)
            elif isinstance(n, ast.Import):
                edges[m] |= {a.name for a in n.names} & mods.keys()
            elif (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "import_module" and n.args
                  and isinstance(n.args[0], ast.Constant)):
                edges[m] |= {n.args[0].value} & mods.keys()
    return edges


def test_no_import_circle_lazy_imports_included():
    edges = _graph(_modules())
    state = {}
    path = []

    def visit(m):
        state[m] = "open"
        path.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == "open":
                raise AssertionError("import circle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones(tmp_path):
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("def f():\n    from tclnats_py.b import g\n")
    b.write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from tclnats_py.a import f\n"
                 "import importlib\ndef g():\n    importlib.import_module('tclnats_py.c')\n")
    c.write_text("")
    mods = {"tclnats_py.a": a, "tclnats_py.b": b, "tclnats_py.c": c}
    assert _graph(mods) == {"tclnats_py.a": {"tclnats_py.b"}, "tclnats_py.b": {"tclnats_py.c"}, "tclnats_py.c": set()}
    assert _graph(mods, lazy=False) == {m: set() for m in mods}


def test_top_level_import_loads_only_engine_and_asyncio_core():
    # the asyncio client comes with the first use of tclnats_py.connect/Client
    # (the Tcl face imports the package too, and starts without asyncio)
    code = ("import sys, tclnats_py; first = 'asyncio' in sys.modules; tclnats_py.connect; "
            "print(first); print('\\n'.join(m for m in sys.modules if m.startswith('tclnats_py')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(PKG)).stdout.split()
    # (on 3.10 ErrTimeout subclasses asyncio.TimeoutError, a class of its own there: asyncio comes in)
    assert out[0] == str(sys.version_info < (3, 11))
    loaded = set(out[1:])
    assert "tclnats_py.aio.client" in loaded and "tclnats_py.engine.connection" in loaded
    for face in ("tclnats_py.tclface", "tclnats_py.spark", "tclnats_py.aio.jetstream", "tclnats_py.engine.js"):
        assert not any(m == face or m.startswith(face + ".") for m in loaded), (face, sorted(loaded))


def test_tcl_face_starts_without_asyncio_jetstream_or_ssl():
    code = ("import sys, tclnats_py.tclface.bridge; "
            "print(' '.join(m for m in ('asyncio', 'ssl', 'tclnats_py.engine.js', 'tclnats_py.tclface.js', "
            "'traceback', 'secrets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(PKG)).stdout.strip()
    if sys.version_info < (3, 11):  # asyncio (which imports ssl and traceback) for ErrTimeout's base
        out = " ".join(m for m in out.split() if m not in ("asyncio", "ssl", "traceback"))
    assert out == "", out


# What the Tcl face's start (`import tclnats_py.tclface.bridge`, in the Python
# that the Tcl extension starts without site at the first connection) may
# load: our modules exactly, and of the standard library only these (their
# private parts, _name and name._part, aside).  A plain connection, publish
# and subscribe load nothing more (test_tcl_hosts checks that); JetStream,
# TLS, credentials files, URLs with user info and discovered IP addresses load
# theirs at first use.
TCL_FACE_OURS = {
    "tclnats_py", "tclnats_py._tclcross", "tclnats_py.errors", "tclnats_py.credentials",
    "tclnats_py.engine", "tclnats_py.engine.connection", "tclnats_py.engine.effects",
    "tclnats_py.engine.handshake", "tclnats_py.engine.headers", "tclnats_py.engine.nuid",
    "tclnats_py.engine.options", "tclnats_py.engine.outbound", "tclnats_py.engine.pool",
    "tclnats_py.engine.protocol", "tclnats_py.engine.records", "tclnats_py.engine.registry",
    "tclnats_py.engine.state", "tclnats_py.engine.subjects", "tclnats_py.engine.validate", "tclnats_py.engine.driver", "tclnats_py.tclface", "tclnats_py.tclface.bridge",
    "tclnats_py.tclface.commands", "tclnats_py.tclface.tlsname", "tclnats_py.tclface.values",
    "tclnats_py.tclface.connection", "tclnats_py.tclface.state", "tclnats_py.tclface.io",
    "tclnats_py.tclface.effects", "tclnats_py.tclface.conn_commands", "tclnats_py.tclface.js_commands",
    "tclnats_py.tclface.results", "tclnats_py.tclface.convert",
}
TCL_FACE_STDLIB = {
    "__future__", "bisect", "collections", "copyreg", "enum", "functools", "genericpath", "heapq",
    "importlib", "itertools", "json", "keyword", "math", "operator", "os", "posixpath", "random", "re",
    "reprlib", "stat", "types", "warnings",
}


def test_tcl_face_start_imports_only_its_pinned_set():
    # -S -I: as the extension starts Python (no site, no user environment);
    # on 3.10 errors.py imports asyncio (ErrTimeout's base there): counted as
    # already loaded
    code = ("import sys\n"
            "if sys.version_info < (3, 11):\n"
            "    import asyncio\n"
            "before = set(sys.modules)\n"
            f"sys.path.insert(0, {os.path.dirname(PKG)!r})\n"
            "import tclnats_py.tclface.bridge\n"
            "print('\\n'.join(sorted(set(sys.modules) - before)))\n")
    out = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    ours = {m for m in out if m.startswith("tclnats_py")} - {"tclnats_py._natsproto"}  # (optional C parser)
    assert ours == TCL_FACE_OURS, (sorted(ours - TCL_FACE_OURS), sorted(TCL_FACE_OURS - ours))
    stdlib = {m for m in out if not m.startswith("tclnats_py") and not m.startswith("_") and "._" not in m}
    assert {m.split(".")[0] for m in stdlib} <= TCL_FACE_STDLIB, sorted(
        m for m in stdlib if m.split(".")[0] not in TCL_FACE_STDLIB)


def test_format_exc_formats_the_traceback():
    # the Tcl face's internal-error reports import traceback only when they format one
    from tclnats_py.tclface.convert import format_exc
    try:
        raise ValueError("boom")
    except ValueError:
        text = format_exc()
    assert text.startswith("Traceback (most recent call last):") and "ValueError: boom" in text


def test_jetstream_wire_subjects_only_in_the_engine():
    wire = re.compile(r"\$(JS\.API|JS\.ACK|KV\.|O\.)")
    outside = []
    for name, path in _modules().items():
        if name.startswith("tclnats_py.engine.js"):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if wire.search(code) and not code.strip().startswith(("\"", "'", "``")):
                outside.append(f"{path.relative_to(PKG)}:{i}: {line.strip()}")
    tcl_dir = PKG.parent / "tcl" if (PKG.parent / "tcl" / "pkgIndex.tcl").exists() else PKG / "tcl"
    for path in tcl_dir.rglob("*.tcl"):  # the 2.x layer (tcl/v2/) too
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if wire.search(line) and not line.strip().startswith("#"):
                outside.append(f"tcl/{path.relative_to(tcl_dir).as_posix()}:{i}: {line.strip()}")
    assert not outside, "\n".join(outside)


def test_walking_the_package_in_a_checkout_finds_only_its_modules():
    # in a source checkout tclnats_py.tcl and tclnats_py.compat come from the
    # top's tcl/ and compat/, but the package's __path__ is its own folder:
    # walking it names no module outside tclnats_py/ (setup.py, tests/, a
    # tclnats_py.tclnats_py); packages that need a missing dependency count as
    # found (onerror), as walk_packages imports packages to recurse
    code = ("import pkgutil, sys, tclnats_py, tclnats_py.tcl, tclnats_py.compat.runner\n"
            "print(repr(tclnats_py.__path__))\n"
            "print(tclnats_py.tcl.__file__)\n"
            "print(tclnats_py.compat.runner.__file__)\n"
            "for m in pkgutil.walk_packages(tclnats_py.__path__, 'tclnats_py.', onerror=lambda name: None):\n"
            "    print(m.name)\n")
    # the checkout these tests belong to (CI tests an installed wheel: its
    # checkout's package is imported here by path, without a build)
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = pathlib.Path(top, "tclnats_py")
    env = dict(os.environ, PYTHONPATH=top)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=top, env=env).stdout.split("\n")
    assert out[0] == repr([str(src)])
    assert out[1] == os.path.join(top, "tcl", "__init__.py")
    assert out[2] == os.path.join(top, "compat", "runner.py")
    names = [n for n in out[3:] if n]
    assert "tclnats_py.engine.connection" in names and "tclnats_py.aio.client" in names
    outside = []
    for name in names:
        rel = src.joinpath(*name.split(".")[1:])
        if not (rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file()
                or any(src.glob(str(rel.relative_to(src)) + ".*.so"))):
            outside.append(name)
    assert not outside, outside
    assert not [n for n in names if n.startswith(("tclnats_py.tclnats_py", "tclnats_py.setup", "tclnats_py.tests"))]
