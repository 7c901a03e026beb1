"""The public Python API is typed: py.typed ships, mypy
(mypy.ini: the whole package) runs clean,
and the public methods carry annotations and docstrings.  And the types reach
the user: programs using the package pass mypy --strict and
pyright strict, and lines that misuse it fail, each for its reason."""

import inspect
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import tclnats_py
from tclnats_py.aio import kv, objectstore
from tclnats_py.aio import jetstream as js
from tclnats_py import sync

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.unit
def test_py_typed_is_beside_the_package_under_test():
    # CI runs the suite from the installed wheel, so this is the wheel's copy;
    # the wheel's contents are checked in tests/install/test_installed.py
    assert os.path.isfile(os.path.join(os.path.dirname(tclnats_py.__file__), "py.typed"))


@pytest.mark.unit
def test_mypy_runs_clean():
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "mypy.ini")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr


def _public_methods():
    for cls in (tclnats_py.Client, tclnats_py.Subscription, tclnats_py.Headers, js.JetStream, js.Stream,
                js.Consumer, js.JsMsg, js.ConsumeContext, js.MessagesContext, js.OrderedConsumer,
                js.PushSubscription, kv.KeyValue, kv.KvWatcher, objectstore.ObjectStore, sync.Client,
                sync.Subscription, sync.SyncMsg):
        for name, fn in vars(cls).items():
            if name.startswith("_") or not inspect.isfunction(fn):
                continue
            yield cls, name, fn


@pytest.mark.unit
def test_public_methods_have_docstrings_and_annotations():
    missing_doc, missing_ann = [], []
    for cls, name, fn in _public_methods():
        if not (fn.__doc__ or "").strip():
            missing_doc.append(f"{cls.__name__}.{name}")
        sig = inspect.signature(fn)
        if sig.return_annotation is inspect.Signature.empty:
            missing_ann.append(f"{cls.__name__}.{name} -> ?")
        for p in list(sig.parameters.values())[1:]:
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            if p.annotation is inspect.Parameter.empty:
                missing_ann.append(f"{cls.__name__}.{name}({p.name})")
    assert not missing_doc, f"{len(missing_doc)} public methods without a docstring: {missing_doc}"
    assert not missing_ann, f"{len(missing_ann)} unannotated: {missing_ann}"


@pytest.mark.unit
def test_options_declared_for_type_checkers_match_the_option_table():
    """engine/options.py declares Options' attributes for mypy: the same names as OPTION_SPEC."""
    import ast
    from tclnats_py.engine.options import OPTION_SPEC
    src = open(os.path.join(ROOT, "tclnats_py", "engine", "options.py"), encoding="utf-8").read()
    cls = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == "Options")
    block = next(n for n in cls.body if isinstance(n, ast.If))
    declared = [n.target.id for n in block.body if isinstance(n, ast.AnnAssign)]
    assert declared == list(OPTION_SPEC)


# ---------------------------------------------------------------- what a user's type checker sees
# tests/install/typing/clean: programs that must type-check clean under mypy --strict
# and pyright strict (the README's Python blocks, typed programs using
# connect, pub/sub, request, JetStream, KV, Object Store), with the Python
# programs of examples/.  tests/install/typing/must_fail.py: lines that must each
# fail, for the reason named on the line.

TYPING = os.path.join(ROOT, "tests", "install", "typing")
CLEAN = sorted(os.path.join(TYPING, "clean", f) for f in os.listdir(os.path.join(TYPING, "clean"))
               if f.endswith(".py"))
EXAMPLES = [os.path.join(ROOT, "examples", f) for f in sorted(os.listdir(os.path.join(ROOT, "examples")))
            if f.endswith(".py")]
MUST_FAIL = os.path.join(TYPING, "must_fail.py")
_MARK = re.compile(r"#\s*must fail:\s*mypy\[([\w-]+)\]\s*pyright\[(\w+)\]")


def _marked_lines() -> dict[int, tuple[str, str]]:
    """line number (1-based) -> (mypy code, pyright rule) of each must-fail line."""
    out = {}
    with open(MUST_FAIL, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = _MARK.search(line)
            if m:
                out[n] = (m.group(1), m.group(2))
    return out


def _mypy(paths: list[str]) -> tuple[int, str, dict[int, set[str]]]:
    """mypy as tests/install/typing/mypy.ini has it (--strict): exit code, output, line -> error codes."""
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(TYPING, "mypy.ini"),
                        "--no-error-summary", "--show-error-codes", *paths],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    by_line: dict[int, set[str]] = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(.+?):(\d+): error: .*?(?:  \[([\w-]+)\])?$", line)
        if m:
            by_line.setdefault(int(m.group(2)), set()).add(m.group(3) or "(no code)")
    return r.returncode, r.stdout + r.stderr, by_line


def _pyright_command() -> list[str]:
    exe = shutil.which("pyright")
    if exe is None:
        pytest.skip("pyright not found: npm install -g pyright (or pip install pyright) to run the pyright checks")
    return [exe]


def _pyright(paths: list[str]) -> tuple[dict, dict[int, set[str]]]:
    """pyright as tests/install/typing/pyrightconfig.json has it (strict): its JSON report, line -> rules of errors."""
    r = subprocess.run([*_pyright_command(), "-p", os.path.join(TYPING, "pyrightconfig.json"), "--outputjson",
                        *paths], cwd=ROOT, capture_output=True, text=True, timeout=900)
    try:
        report = json.loads(r.stdout)
    except ValueError:
        pytest.fail(f"pyright gave no report (exit {r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}")
    by_line: dict[int, set[str]] = {}
    for d in report["generalDiagnostics"]:
        if d["severity"] == "error":
            by_line.setdefault(d["range"]["start"]["line"] + 1, set()).add(d.get("rule", "(no rule)"))
    return report, by_line


@pytest.mark.unit
def test_connect_options_typed_match_the_option_table():
    """The TypedDict of connect's keywords names exactly what connect accepts
    (aio/options.py known_names(), made from its option tables), but
    ``servers``, which is connect's first parameter."""
    from tclnats_py.aio.options import TABLE, ConnectOptions, known_names
    typed = set(ConnectOptions.__optional_keys__) | set(ConnectOptions.__required_keys__)
    assert not ConnectOptions.__required_keys__
    # retry_on_failed_connect: typed ahead of its option, which another branch adds to the table
    accepted = set(known_names()) | {"retry_on_failed_connect"}
    assert "servers" in accepted and "servers" not in typed
    assert typed == accepted - {"servers"}, (sorted(typed - accepted), sorted(accepted - typed - {"servers"}))
    assert {o.name for o in TABLE} <= accepted
    assert tclnats_py.ConnectOptions is ConnectOptions


@pytest.mark.unit
def test_config_keywords_typed_match_the_config_classes():
    """The TypedDicts of create_stream's and create_consumer's keywords name
    the fields of StreamConfig (but ``name``, create_stream's first
    parameter) and ConsumerConfig, the names their replace() accepts."""
    from tclnats_py.aio.jetstream.config import ConsumerConfig, ConsumerFields, StreamConfig, StreamFields
    assert not StreamFields.__required_keys__ and not ConsumerFields.__required_keys__
    assert set(StreamFields.__optional_keys__) == StreamConfig._names - {"name"}
    assert set(ConsumerFields.__optional_keys__) == ConsumerConfig._names


@pytest.mark.unit
def test_key_value_keywords_typed_match_the_bucket_options():
    """KeyValueFields names what create_key_value passes on: the engine's
    bucket_config options in this face's names (ttl in seconds for ttl_ms,
    replicas for num_replicas), without the aggregate's and mirror's own."""
    from tclnats_py.aio.jetstream.config import KeyValueFields
    from tclnats_py.engine.js.kv import bucket_config
    engine = set(inspect.signature(bucket_config).parameters) - {"bucket"}
    face = ((engine - {"origins", "writable", "mirror_origin", "ttl_ms", "num_replicas", "limit_marker_ttl_ms"})
            | {"ttl", "replicas", "limit_marker_ttl"})
    assert set(KeyValueFields.__optional_keys__) == face


@pytest.mark.unit
def test_typed_names_of_the_package_resolve():
    """What the type checkers import under TYPE_CHECKING is what the lazy names give at run time."""
    from tclnats_py.aio import client
    for name in ("Client", "ClientMsg", "Subscription", "connect"):
        assert getattr(tclnats_py, name) is getattr(client, name)
    with pytest.raises(AttributeError):
        tclnats_py.conect  # noqa: B018  (the misspelling must_fail.py checks)


def _doc_python_blocks():
    """(file, block) for each ```python block of README.md and of docs/*.md,
    but for nats-py programs (``import nats``: nats-py's API, typed by it)."""
    paths = [os.path.join(ROOT, "README.md")]
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        paths += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            if not re.search(r"^import nats$", block, re.M):
                yield os.path.relpath(path, ROOT), block


@pytest.mark.unit
def test_doc_python_blocks_are_in_the_typed_programs():
    """Every ```python block of README.md and the docs (nats-py programs
    aside) is, line for line, in a file of tests/install/typing/clean (maybe
    indented inside a typed function), so the type checks below cover what
    the documentation shows."""
    blocks = list(_doc_python_blocks())
    assert len(blocks) >= 6 and any(path == "README.md" for path, _ in blocks)
    files = {p: [ln.strip() for ln in open(p, encoding="utf-8").read().splitlines() if ln.strip()] for p in CLEAN}
    for path, block in blocks:
        want = [ln.strip() for ln in block.splitlines() if ln.strip()]
        found = any(want == lines[i:i + len(want)] for lines in files.values() for i in range(len(lines)))
        assert found, f"a block of {path} is not in tests/install/typing/clean:\n" + block


@pytest.mark.unit
def test_user_programs_pass_mypy_strict():
    code, out, _ = _mypy(CLEAN + EXAMPLES)
    assert code == 0, out


@pytest.mark.unit
def test_user_programs_pass_pyright_strict():
    report, by_line = _pyright(CLEAN + EXAMPLES)
    assert report["summary"]["errorCount"] == 0, json.dumps(report["generalDiagnostics"], indent=1)[:6000]


@pytest.mark.unit
def test_must_fail_lines_fail_mypy_each():
    marked = _marked_lines()
    assert len(marked) >= 20
    code, out, by_line = _mypy([MUST_FAIL])
    assert code == 1
    missing = {n: want for n, (want, _) in marked.items() if want not in by_line.get(n, set())}
    assert not missing, f"lines that do not fail as marked (line: mypy code): {missing}\n{out}"
    stray = {n: codes for n, codes in by_line.items() if n not in marked}
    assert not stray, f"errors on lines not marked (the setup must be correct code): {stray}\n{out}"


@pytest.mark.unit
def test_must_fail_lines_fail_pyright_each():
    marked = _marked_lines()
    _, by_line = _pyright([MUST_FAIL])
    missing = {n: want for n, (_, want) in marked.items() if want not in by_line.get(n, set())}
    assert not missing, f"lines that do not fail as marked (line: pyright rule): {missing} (got {by_line})"
    stray = {n: rules for n, rules in by_line.items() if n not in marked}
    assert not stray, f"errors on lines not marked: {stray}"


@pytest.mark.parametrize("name", ["typed_core", "typed_jetstream", "typed_kv", "typed_objectstore", "typed_js_ttl"])
def test_typed_programs_run(js_server, name):
    """The typed programs are real programs: each runs against a server."""
    import asyncio
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"_typed_{name}", os.path.join(TYPING, "clean", name + ".py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    asyncio.run(mod.main(js_server.url))
