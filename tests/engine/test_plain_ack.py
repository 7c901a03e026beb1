"""natsproto.c plain_ack against engine/js/publish.py's reference, the
_PLAIN_ACK pattern and the dict parse_ack_fast makes of a match: the same
result (or None for what the pattern refuses) on the server's acks and on
random bytes around them."""

import random

import pytest

from tclnats_py.engine.js import publish
from tclnats_py.engine.records import Msg

from tests.engine.mutate import mutated

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(publish._plain_ack is None, reason="the accelerator is not built")]


reference = publish._parse_plain_ack


ACKS = [
    b'{"stream":"S","seq":1}',
    b'{"stream":"KV_bucket","seq":18446744073709551615}',
    b'{"stream":"S","seq":123456789012345678901234567890}',
    b'{"stream":"S","domain":"hub","seq":7}',
    b'{"stream":"S","domain":"","seq":7,"duplicate":true}',
    b'{"stream":"S","seq":7,"duplicate": true}',
    b'{"stream":"\xc3\xa9t\xc3\xa9","seq":2}',
    b'{"stream":"S","seq":7,"duplicate":false}',
    b'{"stream":"","seq":1}',
    b'{"stream":"S","seq":}',
    b'{"stream":"S","seq":1} ',
    b'{"stream":"S", "seq":1}',
    b'{"stream":"S\\"x","seq":1}',
    b'{"stream":"S","seq":1,"val":"3"}',
    b'{"error":{"code":503,"err_code":10077,"description":"no"}}',
    b'',
    b'{"stream":"S","domain":"d","seq":-1}',
]


@pytest.mark.parametrize("data", ACKS)
def test_the_servers_acks(data):
    assert publish._plain_ack(data) == reference(data)


def test_random_bytes_around_them():
    rnd = random.Random(20261128)
    alphabet = b'{}":,\\ 0123456789abcdeftrusqmino_-\xc3\xa9'
    for _ in range(20000):
        data = mutated(rnd, ACKS, alphabet, 3, 0.4, 0.8)
        try:
            want = reference(data)
        except UnicodeDecodeError:
            with pytest.raises(UnicodeDecodeError):
                publish._plain_ack(data)
            continue
        assert publish._plain_ack(data) == want, data


def test_a_dict_subclass_of_the_face():
    class Ack(dict):
        pass
    ack = publish._plain_ack(b'{"stream":"S","seq":3}', Ack)
    assert type(ack) is Ack and ack == {"stream": "S", "seq": 3}
    assert type(publish.parse_ack_fast(Msg("i", b'{"stream":"S","seq":3,"val":"1"}'), Ack)) is Ack
    with pytest.raises(TypeError):
        publish._plain_ack(b'{"stream":"S","seq":3}', list)


def test_parse_ack_fast_is_parse_ack_for_the_rest():
    assert publish.parse_ack_fast(Msg("i", b'{"stream":"S","seq":3}')) == {"stream": "S", "seq": 3}
    with pytest.raises(Exception) as e:
        publish.parse_ack_fast(Msg("i", b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 2"}}'))
    assert e.value.code == "ErrWrongLastSequence"


def _reference_seq(data):
    ack = reference(data)
    if ack is None or any(b >= 0x80 for b in data):
        return None
    return ack["seq"]


@pytest.mark.parametrize("data", ACKS)
def test_plain_ack_seq_is_the_acks_seq(data):
    assert publish._plain_ack_seq(data) == _reference_seq(data)


def test_plain_ack_seq_on_random_bytes():
    rnd = random.Random(20261129)
    alphabet = b'{}":,\\ 0123456789abcdeftrusqmino_-\xc3\xa9'
    for _ in range(20000):
        data = mutated(rnd, ACKS, alphabet, 3, 0.0, 1.0)
        try:
            want = _reference_seq(data)
        except UnicodeDecodeError:
            want = None
        assert publish._plain_ack_seq(data) == want, data
    assert publish._plain_ack_seq(bytearray(ACKS[0])) is None
    assert publish._plain_ack_seq("text") is None


def test_the_stream_names_of_acks_one_after_the_other():
    # the last ASCII stream name is kept: each ack still carries its own
    for data in (b'{"stream":"S","seq":1}', b'{"stream":"T","seq":2}', b'{"stream":"ST","seq":3}',
                 b'{"stream":"\xc3\xa9","seq":4}', b'{"stream":"S","seq":5}', b'{"stream":"s","seq":6}'):
        assert publish._plain_ack(data) == reference(data)


def test_the_faces_pub_ack_and_a_subclass_with_its_own_init():
    from tclnats_py.jsface.info import PubAck
    ack = publish._plain_ack(b'{"stream":"S","domain":"d","seq":3,"duplicate":true}', PubAck)
    assert type(ack) is PubAck and (ack.stream, ack.seq, ack.domain, ack.duplicate) == ("S", 3, "d", True)

    class Marked(dict):
        def __init__(self):
            super().__init__(marked=True)
    assert publish._plain_ack(b'{"stream":"S","seq":3}', Marked) == {"marked": True, "stream": "S", "seq": 3}


@pytest.mark.parametrize("data", [b'{"stream":"S","seq":9}', b'{"stream":"S","seq":9,"val":"1"}'])
def test_ack_seq_with_and_without_the_accelerator(data, monkeypatch):
    compiled = publish.ack_seq(Msg("i", data))
    monkeypatch.setattr(publish, "_plain_ack_seq", None)
    monkeypatch.setattr(publish, "_plain_ack", None)
    assert publish.ack_seq(Msg("i", data)) == compiled == 9
    with pytest.raises(Exception) as e:
        publish.ack_seq(Msg("i", b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"}}'))
    assert e.value.code == "ErrWrongLastSequence"
