"""Subject, wildcard and queue-group checks (ADR-6 naming, as nats-tcl's
CheckSubject applies them: per token, alphanumerics plus
``- ! # $ % & ' ( ) + , / : ; < = ? @ ^ _ ` | ~``)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tclnats_py import Engine, NatsError, Options
from tclnats_py.engine.subjects import valid_queue, valid_subject, valid_token, valid_wildcard_subject

PUNCT = "-!#$%&'()+,/:;<=?@^_`|~"
FORBIDDEN = " \t\r\n.*>\\\"[]{}"

# subject, as a publish/reply subject, as a subscribe subject, as a queue group
CASES = [
    ("a", True, True, True),
    ("foo.bar.baz", True, True, False),
    ("$JS.API.STREAM.INFO.X", True, True, False),
    ("_INBOX.abc123", True, True, False),
    ("a/b:c@d;e=f?g", True, True, True),
    (PUNCT, True, True, True),
    ("árvíztűrő.tükörfúrógép", True, True, False),
    ("日本.語", True, True, False),
    ("*", False, True, False),
    (">", False, True, False),
    ("a.*.c", False, True, False),
    ("a.>", False, True, False),
    ("a.>.b", False, False, False),  # nats-tcl checks tokens only; the server refuses ">" before the end
    ("a*", False, False, False),
    ("a.b>", False, False, False),
    ("", False, False, False),
    (".", False, False, False),
    ("a..b", False, False, False),
    (".a", False, False, False),
    ("a.", False, False, False),
    ("a b", False, False, False),
    ("a\tb", False, False, False),
    ("a\r\nPUB x 1", False, False, False),
    ("a\\b", False, False, False),
    ('a"b', False, False, False),
    ("a[0]", False, False, False),
    ("a{b}", False, False, False),
]


@pytest.mark.parametrize("subject,plain,wild,queue", CASES, ids=[repr(c[0]) for c in CASES])
def test_naming_rules(subject, plain, wild, queue):
    assert valid_subject(subject) is plain
    assert valid_wildcard_subject(subject) is wild
    assert valid_queue(subject) is queue


def test_results_are_stable_past_the_cache_size():
    # the caches are cleared when full: answers must not change
    for i in range(10000):
        assert valid_subject(f"s.{i}") and not valid_subject(f"s {i}")
        assert valid_wildcard_subject(f"s.*.{i}") and not valid_wildcard_subject(f"s.*{i}")


tokens = st.text(alphabet=st.sampled_from("abcXYZ019" + PUNCT), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=6))
def test_property_tokens_joined_by_dots_are_valid(toks):
    subj = ".".join(toks)
    assert valid_subject(subj) and valid_wildcard_subject(subj)
    assert all(valid_token(t) and valid_queue(t) for t in toks)


@settings(max_examples=300, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=6), st.sampled_from(FORBIDDEN), st.integers(0, 100))
def test_property_a_forbidden_character_makes_it_invalid(toks, ch, where):
    subj = ".".join(toks)
    i = where % (len(subj) + 1)
    bad = subj[:i] + ch + subj[i:]
    assert not valid_queue(bad)
    if ch != ".":  # a dot inside a token only splits it in two
        assert not valid_subject(bad)
    if ch not in ".*>":
        assert not valid_wildcard_subject(bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens | st.sampled_from(["*", ">"]), min_size=1, max_size=6))
def test_property_wildcards_only_as_whole_tokens(toks):
    subj = ".".join(toks)
    assert valid_wildcard_subject(subj) is (">" not in toks[:-1])
    assert valid_subject(subj) is not any(t in ("*", ">") for t in toks)


def engine(**opts):
    e = Engine(Options(**opts))
    e.configure_servers(["nats://h:1"])
    e.connect()  # connecting: publish/subscribe are buffered, checks apply
    return e


@pytest.mark.parametrize("call,code", [
    (lambda e: e.publish("a b", b""), "ErrBadSubject"),
    (lambda e: e.publish("a.*", b""), "ErrBadSubject"),
    (lambda e: e.publish("", b""), "ErrBadSubject"),
    (lambda e: e.publish("ok", b"", reply="bad reply"), "ErrBadSubject"),
    (lambda e: e.publish("ok", b"", reply="r.>"), "ErrBadSubject"),
    (lambda e: e.subscribe("a..b"), "ErrBadSubject"),
    (lambda e: e.subscribe("ok", queue="q.1"), "ErrBadQueueName"),
    (lambda e: e.subscribe("ok", queue="q 1"), "ErrBadQueueName"),
    (lambda e: e.request("a b", b"", 100), "ErrBadSubject"),
    (lambda e: e.request("a b", b"", 100, max_msgs=2), "ErrBadSubject"),
])
def test_engine_applies_the_checks(call, code):
    e = engine()
    with pytest.raises(NatsError) as err:
        call(e)
    assert err.value.code == code
    assert not [s for s in e.subs.values() if s.kind == "gather"]  # nothing left behind


def test_check_subjects_false_lets_anything_non_empty_through():
    e = engine(check_subjects=False)
    e.publish("a..b", b"")
    e.publish("x", b"", reply="r.>")
    e.subscribe("a b", queue="q.1")
    with pytest.raises(NatsError) as err:
        e.publish("", b"")  # never an empty subject
    assert err.value.code == "ErrBadSubject"
