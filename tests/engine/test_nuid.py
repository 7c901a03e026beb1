"""engine.nuid: reply tokens and inboxes that do not repeat."""

from tclnats_py.engine.nuid import Nuid, new_inbox, next_token


def test_tokens_are_unique_and_subject_safe():
    n = Nuid()
    seen = {n.next() for _ in range(50_000)}
    assert len(seen) == 50_000
    assert all(t.isalnum() and len(t) == len(next(iter(seen))) for t in list(seen)[:1000])
    assert next_token() != next_token()


def test_inboxes_have_the_prefix_and_differ():
    a, b = new_inbox(), new_inbox("_MY")
    assert a.startswith("_INBOX.") and b.startswith("_MY.") and a.split(".")[1] != b.split(".")[1]
