"""Kafka error codes and the kraftd exception tree.

Contracts:
1. Every exception we raise on purpose derives from :class:`KraftError` and carries the Kafka
   :class:`ErrorCode` a response should use for it (``.error_code``).
2. Fault is explicit: :class:`RemoteProtocolError` is for what a peer sent us, :class:`LocalProtocolError`
   for our own misuse of the protocol (a bug on our side or a caller's).
3. :class:`ErrorCode` holds every code of Kafka's ``Errors`` table (-1 .. 133) with the wire value as the
   enum value; ``.retriable`` mirrors whether Kafka's exception for that code is a ``RetriableException``;
   ``.message`` is a short default description written for this project.
4. This module imports nothing from the project (``generated`` depends on it).
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """Kafka's error codes (clients/.../protocol/Errors.java). Values are the wire values."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @property
    def retriable(self) -> bool:
        """True when Kafka models this error as transient (its exception is a RetriableException)."""
        return self.value in _RETRIABLE

    @property
    def message(self) -> str:
        """A short default description of the error."""
        return _MESSAGES.get(self.value) or self.name.replace("_", " ").lower()

    @classmethod
    def from_code(cls, code: int) -> ErrorCode:
        """The member for a wire value; codes this table does not know map to UNKNOWN_SERVER_ERROR,
        as Kafka's ``Errors.forCode`` does."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


# Codes whose Kafka exception class extends RetriableException.
_RETRIABLE: frozenset[int] = frozenset(
    {2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78, 80, 83, 84, 88, 89}
    | {100, 103, 106, 122, 123, 133}
)

# Our own wording; names that read well on their own fall back to the lower-cased enum name.
_MESSAGES: dict[int, str] = {
    -1: "the server hit an unexpected error while handling the request",
    0: "no error",
    1: "the requested offset lies outside the range the log holds",
    2: "a record batch failed its checksum or structural checks",
    3: "this server does not host the topic or partition",
    6: "this server is neither the leader nor a follower of the partition",
    7: "the request did not complete within its time limit",
    8: "the broker is not available",
    10: "a message is larger than the server accepts",
    13: "the connection closed before a response arrived",
    31: "the principal may not perform this cluster operation",
    35: "this server does not support the requested API version",
    42: "the request is malformed or was sent to an incompatible server",
    43: "the record format in use cannot serve this request",
    74: "the request carries a leader epoch older than the receiver's",
    75: "the request carries a leader epoch newer than the receiver knows",
    76: "the record batch uses a compression codec that is not available",
    87: "a record failed validation",
    94: "the sender or receiver of a voter-only request is not one of the expected voters",
    95: "the requested feature version update is invalid",
    96: "the feature update could not be applied",
    98: "the requested snapshot does not exist",
    99: "the requested position lies outside the snapshot",
    104: "the request's cluster id does not match this cluster",
    114: "the request names an endpoint type that does not match this listener",
    115: "this server does not support the requested endpoint type",
    125: "the voter key does not match the receiving replica",
    126: "the voter already belongs to the voter set",
    127: "the voter does not belong to the voter set",
    129: "client metadata is out of date; re-bootstrap to refresh it",
}


class KraftError(Exception):
    """Root of every error kraftd raises on purpose."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, error_code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class ProtocolError(KraftError):
    """Something about the Kafka protocol went wrong; subclasses say whose fault it is."""


class LocalProtocolError(ProtocolError):
    """We (or our caller) tried to do something the protocol forbids."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class RemoteProtocolError(ProtocolError):
    """A peer sent us something the protocol forbids."""

    error_code = ErrorCode.INVALID_REQUEST


class MessageDecodeError(RemoteProtocolError):
    """Bytes could not be decoded as the message and version they claim to be (truncated, garbled)."""

    error_code = ErrorCode.INVALID_REQUEST


class MessageEncodeError(LocalProtocolError):
    """A message object cannot be written at the requested version (null into non-nullable, value out of
    range, a non-default value in a non-ignorable field the version lacks)."""


class UnsupportedVersionError(ProtocolError):
    """A message version outside the range a schema or a peer supports."""

    error_code = ErrorCode.UNSUPPORTED_VERSION


class CorruptRecordError(RemoteProtocolError):
    """A record batch failed its CRC or structural checks."""

    error_code = ErrorCode.CORRUPT_MESSAGE


# ---- additions by the wire layer (issue 3) ----


class FrameSizeError(RemoteProtocolError):
    """A frame's size prefix is negative or above the configured maximum (refused before allocating)."""

    error_code = ErrorCode.INVALID_REQUEST


class UnknownApiKeyError(RemoteProtocolError):
    """A request header names an api key this listener does not serve (Kafka closes the connection)."""

    error_code = ErrorCode.INVALID_REQUEST


class ApiNotSupportedError(UnsupportedVersionError):
    """The peer does not support an API we want to send, or no version is common to both sides."""


class UnsupportedCompressionError(ProtocolError):
    """A record batch needs a compression codec that is unknown or whose library is not installed."""

    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class NetworkError(KraftError):
    """A connection failed, closed, or could not be established (no response will arrive)."""

    error_code = ErrorCode.NETWORK_EXCEPTION


class RequestTimeoutError(KraftError):
    """A request got no response within its deadline."""

    error_code = ErrorCode.REQUEST_TIMED_OUT


class ErrorResponse(KraftError):
    """A peer answered with a non-zero error code; ``error_code`` is exactly what it sent."""

    def __init__(self, error_code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or f"{error_code.name}: {error_code.message}", error_code)
