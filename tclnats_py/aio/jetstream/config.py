"""The typed configs of this face: :mod:`tclnats_py.jsface.config` (shared with the blocking face)."""

from tclnats_py.jsface.config import (ConsumerConfig, ConsumerFields, KeyValueFields, StreamConfig,  # noqa: F401
                                      StreamFields)

__all__ = ["StreamConfig", "ConsumerConfig", "StreamFields", "ConsumerFields", "KeyValueFields"]
