"""natspy (nats-py's API) stands on the public asyncio face and engine: it
imports no underscore name of tclnats_py.aio or tclnats_py.engine and touches
no underscore attribute it does not define itself; JetStream API subjects
are written only under engine/js/."""

import ast
import pathlib

import tclnats_py

PKG = pathlib.Path(tclnats_py.__file__).parent


def _py_files(root: pathlib.Path):
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def _own_names(root: pathlib.Path) -> set:
    """Every name natspy defines: functions, classes, attributes it sets,
    variables and parameters."""
    names = set()
    for path in _py_files(root):
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                names.add(n.attr)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.arg):
                names.add(n.arg)
    return names


def foreign_private_uses(pkg: pathlib.Path) -> list:
    """natspy's imports of an underscore name (or module) of the rest of
    tclnats_py (aio, engine, errors ...), and its uses of an underscore attribute that natspy
    itself never defines (so one of another package's)."""
    root = pkg / "natspy"
    own = _own_names(root)
    out = []
    for path in _py_files(root):
        rel = path.relative_to(pkg)
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module \
                    and n.module.split(".")[0] == "tclnats_py" and not n.module.startswith("tclnats_py.natspy"):
                if any(part.startswith("_") for part in n.module.split(".")[1:]):
                    out.append(f"{rel}:{n.lineno}: from {n.module} import ...")
                out += [f"{rel}:{n.lineno}: from {n.module} import {a.name}" for a in n.names
                        if a.name.startswith("_")]
            elif isinstance(n, ast.Import):
                out += [f"{rel}:{n.lineno}: import {a.name}" for a in n.names
                        if a.name.split(".")[0] == "tclnats_py" and not a.name.startswith("tclnats_py.natspy")
                        and any(part.startswith("_") for part in a.name.split(".")[1:])]
            elif isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__") \
                    and n.attr not in own:
                out.append(f"{rel}:{n.lineno}: {ast.unparse(n)}")
    return out


def _docstrings(tree) -> set:
    ids = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def api_subject_strings(pkg: pathlib.Path, needles=("$JS.API",), under: str = "", skip: str = "engine/js") -> list:
    """String literals (docstrings aside, f-strings' text included) holding a
    JetStream API subject, in modules under ``under`` but not ``skip``."""
    out = []
    for path in _py_files(pkg / under if under else pkg):
        rel = path.relative_to(pkg).as_posix()
        if rel.startswith(skip + "/"):
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs \
                    and any(s in n.value for s in needles):
                out.append(f"{rel}:{n.lineno}: {n.value!r}")
    return out


def test_natspy_uses_no_private_name_of_the_asyncio_face_or_engine():
    found = foreign_private_uses(PKG)
    assert not found, "\n".join(found)


def test_natspy_private_check_sees_a_foreign_underscore_name(tmp_path):
    (tmp_path / "natspy").mkdir()
    (tmp_path / "natspy" / "m.py").write_text(
        "from tclnats_py.engine.js.kv import _KEY\n"
        "from tclnats_py.engine import _hidden as h\n"
        "from tclnats_py.natspy.errors import _own\n"
        "import tclnats_py._natsproto\n"
        "def f(impl):\n    impl._write_more()\n    return impl.write_pending\n")
    found = foreign_private_uses(tmp_path)
    assert [f.split(": ", 1)[1] for f in found] == [
        "from tclnats_py.engine.js.kv import _KEY", "from tclnats_py.engine import _hidden",
        "import tclnats_py._natsproto", "impl._write_more"]


def test_js_api_subjects_only_under_engine_js():
    # the benchmarks (tclnats_py/compat in an install) speak the raw protocol
    # on purpose, for every client alike
    found = [f for f in api_subject_strings(PKG) if not f.startswith("compat/")]
    assert not found, "\n".join(found)


def test_natspy_builds_no_consumer_create_subject():
    found = api_subject_strings(PKG, ("CONSUMER.CREATE", "CONSUMER.DURABLE.CREATE"), under="natspy")
    assert not found, "\n".join(found)


def test_api_subject_check_sees_a_literal(tmp_path):
    (tmp_path / "aio").mkdir()
    (tmp_path / "engine" / "js").mkdir(parents=True)
    (tmp_path / "aio" / "m.py").write_text('"""$JS.API in a docstring is fine"""\nS = f"$JS.API.{x}"\n')
    (tmp_path / "engine" / "js" / "api.py").write_text('P = "$JS.API"\n')
    assert api_subject_strings(tmp_path) == ["aio/m.py:2: '$JS.API.'"]


def natspy_import_edges(pkg: pathlib.Path) -> dict:
    """natspy's imports of its own modules, the ones inside functions
    included (those under ``if TYPE_CHECKING:`` never run); importing
    ``a.b.c`` also runs the ``__init__`` of each package on the way that
    is not already one of the importer's."""
    root = pkg / "natspy"
    mods = {}
    for path in _py_files(root):
        name = ".".join(("tclnats_py",) + path.relative_to(pkg).with_suffix("").parts)
        mods[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    edges: dict = {m: set() for m in mods}
    for m, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = {id(x) for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
                for x in ast.walk(n)}
        for n in ast.walk(tree):
            if id(n) in skip:
                continue
            if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and n.module.startswith("tclnats_py.natspy"):
                targets = {f"{n.module}.{a.name}" for a in n.names} & mods.keys()
                parts = n.module.split(".")
                targets |= {".".join(parts[:i]) for i in range(3, len(parts) + 1)} & mods.keys()
                edges[m] |= {t for t in targets if t != m and not m.startswith(t + ".")}
            elif isinstance(n, ast.Import):
                edges[m] |= {a.name for a in n.names} & mods.keys()
    return edges


def find_circle(edges: dict) -> list:
    """One import circle (its modules, first one repeated at the end), or []."""
    state: dict = {}
    path: list = []

    def visit(m):
        state[m] = "open"
        path.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == "open":
                return path[path.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        path.pop()
        state[m] = "done"
        return []

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return []


def test_natspy_imports_form_no_circle_lazy_imports_included():
    circle = find_circle(natspy_import_edges(PKG))
    assert not circle, "import circle: " + " -> ".join(circle)


def test_natspy_circle_check_sees_a_lazy_import(tmp_path):
    (tmp_path / "natspy").mkdir()
    (tmp_path / "natspy" / "__init__.py").write_text("")
    (tmp_path / "natspy" / "a.py").write_text("from tclnats_py.natspy.b import g\n")
    (tmp_path / "natspy" / "b.py").write_text("def g():\n    from tclnats_py.natspy import a\n")
    assert find_circle(natspy_import_edges(tmp_path)) == [
        "tclnats_py.natspy.a", "tclnats_py.natspy.b", "tclnats_py.natspy.a"]


def engine_imports(pkg: pathlib.Path, modules: tuple) -> list:
    """natspy's imports (lazy ones included) of the given engine modules or of names in them."""
    out = []
    for path in _py_files(pkg / "natspy"):
        rel = path.relative_to(pkg)
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                names = {n.module} | {f"{n.module}.{a.name}" for a in n.names}
                out += [f"{rel}:{n.lineno}: {m}" for m in sorted(names & set(modules))]
            elif isinstance(n, ast.Import):
                out += [f"{rel}:{n.lineno}: {a.name}" for a in n.names if a.name in modules]
    return out


_JS_STATE_MACHINES = ("tclnats_py.engine.js.push", "tclnats_py.engine.js.ordered", "tclnats_py.engine.js.inbox_fetch")


def test_natspy_drives_no_engine_jetstream_state_machine():
    # push deliveries, the ordered consumer and the fetch on an inbox are the
    # asyncio face's (aio/jetstream push.py, ordered.py, JetStream.fetch_on_inbox)
    found = engine_imports(PKG, _JS_STATE_MACHINES)
    assert not found, "\n".join(found)


def test_engine_import_check_sees_each_form(tmp_path):
    (tmp_path / "natspy").mkdir()
    (tmp_path / "natspy" / "m.py").write_text(
        "from tclnats_py.engine.js.push import PushState\n"
        "from tclnats_py.engine.js import ordered as o\n"
        "def f():\n    import tclnats_py.engine.js.inbox_fetch\n"
        "from tclnats_py.engine.js import kv\n")
    assert [f.split(": ", 1)[1] for f in engine_imports(tmp_path, _JS_STATE_MACHINES)] == [
        "tclnats_py.engine.js.push", "tclnats_py.engine.js.ordered", "tclnats_py.engine.js.inbox_fetch"]
