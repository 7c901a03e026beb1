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


def _graph(mods):
    """Module-level imports between our modules (imports inside functions are deferred,
    those under ``if TYPE_CHECKING:`` never run)."""
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                continue  # imports for annotations only: not run
            for n in [node] if not isinstance(node, (ast.If, ast.Try)) else ast.walk(node):
                if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("tclnats_py"):
                    subs = {f"{n.module}.{a.name}" for a in n.names} & mods.keys()
                    edges[m] |= subs
                    if n.module in mods and len(subs) < len(n.names) and not m.startswith(n.module + "."):
                        edges[m].add(n.module)
                elif isinstance(n, ast.Import):
                    edges[m] |= {a.name for a in n.names} & mods.keys()
    return edges


def test_no_import_circle():
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
