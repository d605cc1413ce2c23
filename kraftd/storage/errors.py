"""Typed storage errors (all derive from :class:`kwire.errors.KraftError`).

Contracts:
1. :class:`LogIOError` is fatal: a node that sees it must stop without acknowledging anything further.
2. :class:`StorageNotReadyError` and its subclasses mean "refuse to start"; their message tells the operator what
   is wrong and how to fix it.
"""

from __future__ import annotations

from kwire.errors import ErrorCode, KraftError


class StorageError(KraftError):
    """Something about the on-disk state is wrong."""


class LogIOError(StorageError):
    """A write or fsync failed; durability can no longer be promised (fatal)."""


class StorageNotReadyError(StorageError):
    """The directory cannot be used to start a node."""


class NotFormattedError(StorageNotReadyError):
    """meta.properties is missing: the directory was never formatted."""


class InconsistentMetaError(StorageNotReadyError):
    """meta.properties disagrees with the configuration (cluster id or node id)."""

    error_code = ErrorCode.INCONSISTENT_CLUSTER_ID


class MalformedFileError(StorageError):
    """A state file (meta.properties, quorum-state, leader-epoch-checkpoint) cannot be parsed."""


class LogAppendError(StorageError):
    """An append violates the log's invariants (gap, overlap, epoch going backwards, bad CRC)."""
