"""The package as users get it: a non-editable ``pip install .`` into a fresh
venv, then stock tclsh with only the installed package's folder on
TCLLIBPATH, started without the venv on PATH and with PYTHONHOME/PYTHONPATH
set elsewhere: the Tcl extension finds the venv's Python by itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import venv

import pytest

from tclnats_py.tclface.tclsh import find_tclsh

pytestmark = [pytest.mark.tcl, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def installed_venv(tmp_path_factory):
    if os.environ.get("TCLNATS_SKIP_INSTALL_TEST"):
        pytest.skip("TCLNATS_SKIP_INSTALL_TEST is set")
    root = tmp_path_factory.mktemp("venv")
    env_dir = root / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # a copy of the source tree: pip builds in it, the checkout stays clean
    src = root / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "__pycache__", "*.so", ".tox", ".pytest_cache", ".hypothesis"))
    # as a user installs it (pip's isolated build); the dependencies are not
    # needed for what is checked here
    p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                        str(src)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return py


def test_stock_tclsh_with_the_installed_package(installed_venv, tmp_path, nats_server):
    py = installed_venv
    pkgdir = subprocess.run([str(py), "-c", "import os, tclnats_py; print(os.path.dirname(tclnats_py.__file__))"],
                            capture_output=True, text=True, check=True, cwd=str(tmp_path)).stdout.strip()
    assert pkgdir.startswith(str(py.parent.parent)), pkgdir   # the venv's copy, not the checkout
    script = tmp_path / "app.tcl"
    script.write_text(textwrap.dedent(f"""
        package require nats
        puts "provider: [lindex $::tclnats::provider 1]"
        set c [nats::connection new]
        $c configure -servers {nats_server.url}
        $c connect
        $c subscribe echo -callback {{apply {{{{s m r}} {{ $::c publish $r $m }}}}}}
        puts "reply: [$c request echo hi -timeout 2000]"
        $c destroy
    """))
    probe = tmp_path / "probe.tcl"
    env = {"PATH": "/usr/bin:/bin", "TCLLIBPATH": pkgdir, "HOME": str(tmp_path),
           "PYTHONHOME": "/nonexistent", "PYTHONPATH": "/nonexistent"}
    p = subprocess.run([find_tclsh(), str(script)], capture_output=True, text=True, timeout=60, env=env,
                       cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"provider: {os.path.join(pkgdir, 'tcl', 'pkgIndex.tcl')}" in p.stdout
    assert "reply: hi" in p.stdout
    # the Python that serves Tcl is the venv's
    probe.write_text("package require nats\nputs [dict get [::tclnats::python] prefix]\n")
    p = subprocess.run([find_tclsh(), str(probe)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(py.parent.parent), p.stdout
    # python3 in the venv imports the installed copy with its extension modules
    p = subprocess.run([str(py), "-c", "import tclnats_py._tclcross as c; print(c.__file__)"],
                       capture_output=True, text=True, cwd=str(tmp_path))
    assert p.returncode == 0 and p.stdout.startswith(pkgdir), p.stdout + p.stderr


def test_the_install_ships_every_module_of_the_checkout(installed_venv, tmp_path):
    """Every module under the checkout's tclnats_py/ (and tcl/, compat/) is in
    the installed package (setup.py lists the subpackages by hand)."""
    py = installed_venv
    pkgdir = subprocess.run([str(py), "-c", "import os, tclnats_py; print(os.path.dirname(tclnats_py.__file__))"],
                            capture_output=True, text=True, check=True, cwd=str(tmp_path)).stdout.strip()
    wanted = []
    for top, inside in (("tclnats_py", ""), ("tcl", "tcl"), ("compat", "compat")):
        base = os.path.join(ROOT, top)
        for d, dirs, files in os.walk(base):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for f in files:
                if f.endswith((".py", ".tcl")):
                    wanted.append(os.path.join(inside, os.path.relpath(os.path.join(d, f), base)))
    missing = [w for w in wanted if not os.path.exists(os.path.join(pkgdir, w))]
    assert not missing, missing
    # and each imports in the venv's python (not the Spark source, which needs pyspark, nor
    # _tclload, the Tcl extension that Tcl loads)
    code = ("import importlib, pkgutil, tclnats_py\n"
            "for m in pkgutil.walk_packages(tclnats_py.__path__, 'tclnats_py.'):\n"
            "    if not m.name.startswith(('tclnats_py.spark', 'tclnats_py.compat', 'tclnats_py.tcl', 'tclnats_py._tclload')):\n"
            "        try:\n"
            "            importlib.import_module(m.name)\n"
            "        except ModuleNotFoundError as e:\n"
            "            if (e.name or '').startswith('tclnats_py'):\n"
            "                raise\n"
            "            print('skipped', m.name, 'needs', e.name)  # a dependency (installed --no-deps)\n")
    p = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
