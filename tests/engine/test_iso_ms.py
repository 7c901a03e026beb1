"""natsproto.c iso_ms against engine/js/api.py's Python reading of a time
(_iso_to_ms): the same ms for the server's form of a time, the rounding of
the fraction's halves included, and None (the Python path) for the rest."""

import random

import pytest

from tclnats_py.engine.js import api

pytestmark = [pytest.mark.unit, pytest.mark.skipif(api._iso_ms is None, reason="the accelerator is not built")]


@pytest.mark.parametrize("ts", [
    "2022-11-22T13:31:35.4514983Z", "2026-11-28T09:30:01.123456789Z", "1970-01-01T00:00:00.0Z",
    "1969-12-31T23:59:59.9995Z", "0001-01-01T00:00:00.5Z", "9999-12-31T23:59:60.999999999999999Z",
    "2000-02-31T00:00:00.0005Z", "2024-02-29T12:00:00.0015Z", "2024-03-01T00:00:00.0025Z",
])
def test_the_servers_times(ts):
    assert api._iso_ms(ts) == api._iso_to_ms(ts) == api.iso_to_ms(ts)


@pytest.mark.parametrize("ts", [
    "", "2022-11-22T13:31:35Z", "2022-11-22T13:31:35.Z", "2022-11-22T13:31:35.123+01:00",
    "2022-13-22T13:31:35.1Z", "2022-11-32T13:31:35.1Z", "2022-11-22T24:31:35.1Z", "0000-01-01T00:00:00.1Z",
    "2022-11-22 13:31:35.1Z", "2022-11-22T13:31:35.1234567890123456Z", "２022-11-22T13:31:35.1Z",
    "2022-11-22T13:31:35.1Z\n",
])
def test_other_forms_are_left_to_python(ts):
    assert api._iso_ms(ts) is None


def test_random_times():
    rnd = random.Random(1128)
    for _ in range(20000):
        frac = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 15)))
        if rnd.random() < 0.3:  # halves: ...5 then zeros
            frac = frac[:rnd.randint(0, 3)] + "5" + "0" * rnd.randint(0, 5)
        ts = (f"{rnd.randint(1, 9999):04d}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 31):02d}T"
              f"{rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d}:{rnd.randint(0, 60):02d}.{frac}Z")
        assert api._iso_ms(ts) == api._iso_to_ms(ts), ts
