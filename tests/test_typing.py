"""The public Python API is typed (issue 17 item 8): py.typed ships, mypy
(mypy.ini: the whole package) runs clean,
and the public methods carry annotations and docstrings."""

import inspect
import os
import subprocess
import sys

import pytest

import tclnats_py
from tclnats_py.aio import kv, objectstore
from tclnats_py.aio import jetstream as js

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.unit
def test_py_typed_ships():
    assert os.path.isfile(os.path.join(os.path.dirname(tclnats_py.__file__), "py.typed"))
    setup = open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read()
    assert '"tclnats_py": ["py.typed"]' in setup


@pytest.mark.unit
def test_mypy_runs_clean():
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "mypy.ini")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr


def _public_methods():
    for cls in (tclnats_py.Client, tclnats_py.Subscription, tclnats_py.Headers, js.JetStream, js.Stream,
                js.Consumer, js.JsMsg, js.ConsumeContext, js.MessagesContext, js.OrderedConsumer,
                js.PushSubscription, kv.KeyValue, kv.KvWatcher, objectstore.ObjectStore):
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
