"""Helpers of the interop fixtures: a real-process quorum that lives as long as a fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftd.testing.quorum import MixedQuorum


def running_quorum(
    tmp_path_factory: pytest.TempPathFactory, name: str, kinds: list[str], **kw: object
) -> Iterator[MixedQuorum]:
    """A started :class:`MixedQuorum` of ``kinds`` under a fresh directory, stopped when the generator closes."""
    root: Path = tmp_path_factory.mktemp(name)
    q = MixedQuorum(root, kinds, **kw)  # type: ignore[arg-type]
    q.start_all()
    try:
        yield q
    finally:
        q.stop_all()
