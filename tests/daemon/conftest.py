"""Shared helpers for the daemon tests."""

from tools.local_quorum import write_properties

__all__ = ["write_properties"]
