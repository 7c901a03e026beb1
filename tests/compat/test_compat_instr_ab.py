"""tclnats_py.compat.instr_ab: its scenarios are whole programs, and the
figure it prints is the difference of two counts over the difference of the
message counts (checked with a stand-in for valgrind that reports a known
cost per message)."""

import os
import shutil
import sys

import pytest

from tclnats_py.compat import instr_ab


@pytest.mark.parametrize("name", instr_ab.SCENARIOS)
def test_every_scenario_is_a_whole_program(name):
    lang, source = instr_ab._program(name)
    if lang == "py":
        compile(source, name, "exec")
    else:
        assert source.startswith("package require nats\n") and source.endswith("exit 0\n")
        assert source.count("{") == source.count("}")


def test_an_unknown_scenario_is_refused(capsys):
    with pytest.raises(SystemExit):
        instr_ab._parse_args(["--old", sys.executable, "no_such_path"])
    assert "unknown scenario no_such_path" in capsys.readouterr().err


def test_the_figure_is_the_cost_of_one_message(tmp_path, monkeypatch):
    # the stand-in runs nothing: it writes a callgrind file whose total is
    # 5,000,000 + 1234 * N for the N the scenario was given
    fake = tmp_path / "valgrind"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "out = next(a for a in sys.argv if a.startswith('--callgrind-out-file='))\n"
        "n = int(sys.argv[-3])\n"
        "open(out.split('=', 1)[1], 'w').write(f'events: Ir\\nsummary: {5_000_000 + 1234 * n}\\n')\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert shutil.which("valgrind") == str(fake)
    path = os.path.dirname(os.path.dirname(os.path.abspath(instr_ab.__file__)))
    got = instr_ab.per_message("parser_feed", sys.executable, path, (100, 300), "nats://unused:4222")
    assert got == 1234
