"""Fixture tests for tests/natspy/test_natspy_runner.py (not part of tclnats_py's suite)."""

import asyncio

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


@pytest.mark.skip(reason="skipped on both sides")
def test_skipped():
    raise AssertionError("never runs")
