"""The arguments of a JetStream publish, checked and turned into headers once for both Python faces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tclnats_py.errors import make_error
from tclnats_py.engine.js.api import check_name
from tclnats_py.engine.js.publish import publish_headers
from tclnats_py.engine.validate import check_headers, check_int, check_str

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.connection import Engine

__all__ = ["check_publish", "publish_options"]

# the publish options newer than nats-server 2.10: option -> the api_level feature it needs
_NEWER = (("ttl", "msg_ttl"), ("expected_last_subject_seq_subject", "expected_last_subject_seq_subject"))


def check_publish(engine: Engine, subject: str, headers: Any, msg_id: str | None = None,
                  expected_stream: str | None = None, expected_last_seq: int | None = None,
                  expected_last_subject_seq: int | None = None, expected_last_msg_id: str | None = None,
                  ttl: str | int | None = None, expected_last_subject_seq_subject: str | None = None) -> None:
    """The arguments of a JetStream publish, checked before anything is sent."""
    if not engine.check_subject(subject):
        raise make_error("ErrBadSubject", f"Invalid subject {subject}")
    check_headers(headers)
    for name, v in (("msg_id", msg_id), ("expected_last_msg_id", expected_last_msg_id)):
        check_str(name, v, allow_empty=False)
    if expected_stream is not None:
        check_name("stream", expected_stream)
    check_int("expected_last_seq", expected_last_seq, allow_none=True)
    check_int("expected_last_subject_seq", expected_last_subject_seq, allow_none=True)


def publish_options(engine: Engine, subject: str, headers: Any, **kw: Any) -> tuple[dict | None, list[str]]:
    """The headers of a publish with options ``kw`` (msg_id, expected_stream,
    expected_last_seq, expected_last_subject_seq, expected_last_msg_id, ttl,
    expected_last_subject_seq_subject), checked, and the ``api_level``
    features the server must have for them (the face asks ``require_level``)."""
    check_publish(engine, subject, headers, **kw)
    hdrs = publish_headers(headers, **kw)
    return hdrs, [feature for name, feature in _NEWER if kw.get(name) is not None]
