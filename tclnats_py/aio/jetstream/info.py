"""The typed replies of this face: :mod:`tclnats_py.jsface.info` (shared with the blocking face)."""

from tclnats_py.jsface.info import (AccountInfo, ClusterInfo, ConsumerInfo, ConsumerPauseResponse,  # noqa: F401
                                    ConsumerResetResponse, Info, PeerInfo, PubAck, BatchAck, Reply, SequenceInfo,
                                    StreamInfo, StreamSourceInfo, StreamState)

__all__ = ["Info", "Reply", "StreamInfo", "StreamState", "ClusterInfo", "PeerInfo", "StreamSourceInfo",
           "ConsumerInfo", "SequenceInfo", "PubAck", "BatchAck", "AccountInfo", "ConsumerPauseResponse", "ConsumerResetResponse"]
