"""``nats.aio.errors`` of nats-py 2.x: the older ``Err*`` names, each a
subclass of its ``nats.errors`` class (so ``except ErrTimeout`` and
``except nats.errors.TimeoutError`` both work on what nats-py programs raise)."""

from __future__ import annotations

from tclnats_py.natspy import errors as _e

__all__ = [
    "NatsError", "ErrConnectionClosed", "ErrDrainTimeout", "ErrInvalidUserCredentials", "ErrInvalidCallbackType",
    "ErrConnectionReconnecting", "ErrConnectionDraining", "ErrMaxPayload", "ErrStaleConnection", "ErrJsonParse",
    "ErrSecureConnRequired", "ErrSecureConnWanted", "ErrSecureConnFailed", "ErrBadSubscription", "ErrBadSubject",
    "ErrSlowConsumer", "ErrTimeout", "ErrBadTimeout", "ErrAuthorization", "ErrNoServers",
]


class NatsError(_e.Error):
    """nats-py's old base name."""


class ErrConnectionClosed(_e.ConnectionClosedError):
    """Old name of ConnectionClosedError."""


class ErrDrainTimeout(_e.DrainTimeoutError):
    """Old name of DrainTimeoutError."""


class ErrInvalidUserCredentials(_e.InvalidUserCredentialsError):
    """Old name of InvalidUserCredentialsError."""


class ErrInvalidCallbackType(_e.InvalidCallbackTypeError):
    """Old name of InvalidCallbackTypeError."""


class ErrConnectionReconnecting(_e.ConnectionReconnectingError):
    """Old name of ConnectionReconnectingError."""


class ErrConnectionDraining(_e.ConnectionDrainingError):
    """Old name of ConnectionDrainingError."""


class ErrMaxPayload(_e.MaxPayloadError):
    """Old name of MaxPayloadError."""


class ErrStaleConnection(_e.StaleConnectionError):
    """Old name of StaleConnectionError."""


class ErrJsonParse(_e.JsonParseError):
    """Old name of JsonParseError."""


class ErrSecureConnRequired(_e.SecureConnRequiredError):
    """Old name of SecureConnRequiredError."""


class ErrSecureConnWanted(_e.SecureConnWantedError):
    """Old name of SecureConnWantedError."""


class ErrSecureConnFailed(_e.SecureConnFailedError):
    """Old name of SecureConnFailedError."""


class ErrBadSubscription(_e.BadSubscriptionError):
    """Old name of BadSubscriptionError."""


class ErrBadSubject(_e.BadSubjectError):
    """Old name of BadSubjectError."""


class ErrSlowConsumer(_e.SlowConsumerError):
    """Old name of SlowConsumerError."""


class ErrTimeout(_e.TimeoutError):
    """Old name of TimeoutError."""


class ErrBadTimeout(_e.BadTimeoutError):
    """Old name of BadTimeoutError."""


class ErrAuthorization(_e.AuthorizationError):
    """Old name of AuthorizationError."""


class ErrNoServers(_e.NoServersError):
    """Old name of NoServersError."""
