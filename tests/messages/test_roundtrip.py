"""Property: every message class round-trips at every version it supports.

For each (class, version) in ``generated.messages.ALL_CLASSES`` a random object valid for that version (built from
``FIELDS``, see tests/messages/strategies.py) must satisfy:
1. ``decode(encode(x)) == x`` (all fields present in the version, unknown tags included);
2. ``encode(decode(encode(x))) == encode(x)`` (the encoding is canonical).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.messages.strategies import is_flexible, message_strategy, populated
from tests.messages.support import all_class_versions, pair_id

# each test runs on the compiled codec engine and on the pure-Python generated code (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("codec_path")

PAIRS = all_class_versions()
_STRATEGIES: dict[tuple[str, int], st.SearchStrategy[Any]] = {}


def _strategy(c: Any, v: int) -> st.SearchStrategy[Any]:
    key = (c.NAME, v)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = message_strategy(c, v)
    return _STRATEGIES[key]


def test_registry_is_populated() -> None:
    # Guards the parametrized tests below against silently running over nothing.
    assert len(PAIRS) > 100


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_roundtrip(pair: tuple[Any, int], data: st.DataObject) -> None:
    c, v = pair
    x = data.draw(_strategy(c, v))
    enc = x.encode(v)
    got = c.decode(enc, v)
    assert got == x
    assert got.encode(v) == enc


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_roundtrip_populated(pair: tuple[Any, int]) -> None:
    # Every field of the version set to a non-default value, so nothing can hide behind a default.
    c, v = pair
    x = populated(c, v, is_flexible(c, v))
    enc = x.encode(v)
    assert c.decode(enc, v) == x
    present = [f for f in c.FIELDS if f.versions[0] <= v <= f.versions[1]]
    if present or is_flexible(c, v):
        assert enc != c().encode(v)
