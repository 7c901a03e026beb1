"""engine.options: the option table, one coercion per type, all-or-nothing updates."""

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.options import OPTION_SPEC, Options, coerce, to_bool


def test_defaults_come_from_the_table():
    o = Options()
    for name, (_typ, default) in OPTION_SPEC.items():
        assert getattr(o, name) == default, name
    assert o.connect_timeout == 2000 and o.max_reconnect_attempts == 60


@pytest.mark.parametrize("typ,value,want", [
    ("bool", "yes", True), ("bool", "of", False), ("bool", 1, True), ("bool", False, False),
    ("timeout", "250", 250), ("timeout", 0, 0), ("pos_int", 7, 7), ("int", "-1", -1),
    ("list", "nats://a", ("nats://a",)), ("list", "", ()), ("list", ["a", "b"], ("a", "b")),
    ("valid_str", "n", "n"),
])
def test_coerce_gives_typed_values(typ, value, want):
    assert coerce("opt", typ, value) == want


@pytest.mark.parametrize("typ,value,code", [
    ("bool", "2", "ErrInvalidArg"), ("bool", "o", "ErrInvalidArg"), ("timeout", -1, "ErrBadTimeout"),
    ("timeout", "soon", "ErrBadTimeout"), ("pos_int", -3, "ErrInvalidArg"), ("int", "1.5", "ErrInvalidArg"),
    ("valid_str", "", "ErrInvalidArg"),
])
def test_coerce_refuses_with_the_documented_code(typ, value, code):
    with pytest.raises(NatsError) as e:
        coerce("opt", typ, value)
    assert e.value.code == code and "opt" in str(e.value)


def test_update_is_all_or_nothing_and_reset_restores_the_default():
    o = Options(name="n1", ping_interval=5000)
    with pytest.raises(NatsError):
        o.update({"ping_interval": 9000, "connect_timeout": -1})
    assert o.ping_interval == 5000 and o.connect_timeout == 2000
    with pytest.raises(NatsError) as e:
        o.update({"no_such_option": 1})
    assert e.value.code == "ErrInvalidArg"
    o.reset("ping_interval")
    assert o.ping_interval == OPTION_SPEC["ping_interval"][1]


def test_to_bool_is_none_for_what_tcl_would_refuse():
    assert [to_bool(v) for v in ("TRUE", "f", "No", "ON", "off")] == [True, False, False, True, False]
    assert [to_bool(v) for v in ("", " 1", "2.5", None, 3)] == [None] * 5


@pytest.mark.parametrize("text,want", [
    ("7", 7), (" -3 ", -3), ("+4", 4), (12, 12), ("1.5", None), ("abc", None), ("", None), (True, None),
    (None, None), ("0x10", None),
])
def test_int_text_is_a_decimal_integer(text, want):
    from tclnats_py.engine.validate import int_text
    assert int_text(text) == want


@pytest.mark.parametrize("text,want", [
    ("250", 250), ("500ms", 500), ("30s", 30000), ("2 sec", 2000), ("15m", 900000), ("1min", 60000),
    ("1H", 3600000), ("2d", 172800000), (" 10s ", 10000), ("10x", None), ("-5s", None), ("1.5s", None),
    ("s", None), ("", None), (None, None), (True, None),
])
def test_duration_ms_reads_a_number_with_a_unit(text, want):
    from tclnats_py.engine.validate import duration_ms
    assert duration_ms(text) == want


def test_spark_options_parse_with_the_engines_rules_and_name_the_option():
    from tclnats_py.spark import options as spark
    assert spark.opt_ms({"maxtriggerdelay": "30s"}, "maxtriggerdelay") == 30000
    assert spark.opt_int({"partitions": " 4 "}, "partitions", None, 1) == 4
    assert spark.opt_bool({"decode": "Of"}, "decode", True) is False
    cases = [({"maxtriggerdelay": "soon"}, "option maxTriggerDelay must be a duration such as 500ms, 30s or 15m, "
                                           "not 'soon'"),
             ({"partitions": "abc"}, "option partitions must be an integer, not 'abc'"),
             ({"partitions": "0"}, "option partitions must be >= 1, not 0"),
             ({"failondataloss": "maybe"}, "option failOnDataLoss must be true or false, not 'maybe'")]
    for opts, message in cases:
        with pytest.raises(NatsError) as e:
            spark.check_values(opts)
        assert e.value.code == "ErrInvalidArg" and str(e.value) == message
