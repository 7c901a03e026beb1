"""tclnats_py.compat.plot: the bars it draws from benchmark JSON, and the PNG."""

import json

import pytest

from tclnats_py.compat import plot


def test_bars_from_the_three_benchmarks():
    tcl = {"figures": [{"figure": "publish", "ratio": 3.5}, {"figure": "request", "ratio": None}]}
    py = {"figures": [{"figure": "deliver", "ratio": 1.5}]}
    mem = {"ratios": [{"peer": "nats-py", "ours": "tclnats_py asyncio", "ratio": 1.2}]}
    rows = plot.bars(tcl, py, mem)
    assert rows == [("Tcl publish", 3.5, "Tcl vs nats-tcl"),
                    ("Py deliver", 1.5, "Python vs nats-py"),
                    ("RSS tclnats_py asyncio", 1.2, "memory (peer / ours)")]


def test_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    src = tmp_path / "b.json"
    src.write_text(json.dumps({"figures": [{"figure": "publish", "ratio": 3.5},
                                           {"figure": "deliver", "ratio": 15.0}]}))
    out = tmp_path / "r.png"
    assert plot.main(["--tcl", str(src), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_input_is_an_error(tmp_path):
    assert plot.main(["-o", str(tmp_path / "x.png")]) == 2
