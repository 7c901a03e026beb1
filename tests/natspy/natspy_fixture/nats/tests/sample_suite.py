"""Fixture tests for tests/natspy/test_natspy_runner.py (not part of tclnats_py's suite)."""

import asyncio
from pathlib import Path

import nats
import pytest


def test_timeout_is_asyncio_timeout():
    assert issubclass(nats.errors.TimeoutError, asyncio.TimeoutError)


def test_served_private_attribute():
    nc = nats.NATS()
    assert nc._server_pool == []


def test_unserved_private_attribute():
    nc = nats.NATS()
    assert nc._hidden_state == 1


def test_only_on_the_original():
    assert "tclnats_py" not in nats.__name__


def test_a_file_named_from_the_repository_root():
    # as nats-py's server configurations name their certificates (./nats/tests/certs/...)
    assert Path("nats/tests/sample_suite.py").is_file()


@pytest.mark.skip(reason="skipped on both sides")
def test_skipped():
    raise AssertionError("never runs")
