"""The typed replies of this face: :mod:`tclnats_py.jsface.info` (shared with the blocking face)."""

from tclnats_py.jsface.info import (AccountInfo, ClusterInfo, ConsumerInfo, ConsumerPauseResponse,  # noqa: F401
                                    ConsumerResetResponse, Info, PeerInfo, PubAck, Reply, SequenceInfo,
                                    StreamInfo, StreamSourceInfo, StreamState)

__all__ = ["Info", "Reply", "StreamInfo", "StreamState", "ClusterInfo", "PeerInfo", "StreamSourceInfo",
           "ConsumerInfo", "SequenceInfo", "PubAck", "AccountInfo", "ConsumerPauseResponse", "ConsumerResetResponse"]
