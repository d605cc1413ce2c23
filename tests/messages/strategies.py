"""Hypothesis strategies and deterministic sample objects built from generated ``FIELDS`` metadata.

Contracts (CONTRACTS.md "Generated code"):
1. A field takes part in version ``v`` iff ``v`` lies in ``FieldInfo.versions``; absent fields keep their
   defaults, so every object produced here is writable at ``v``.
2. ``None`` is produced only where ``nullable_versions`` covers ``v``.
3. Unknown tagged fields are produced only for flexible versions, with tags no spec uses (40-47), sorted by tag
   (the order a decoder reports them in).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from hypothesis import strategies as st

from codegen.model import INT_RANGES
from tests.messages.support import U1, in_range

_INT_BOUNDS = INT_RANGES
# Text without lone surrogates (those cannot be UTF-8 encoded, so no Kafka peer could have sent them).
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
UNKNOWN_TAGS = st.lists(
    st.tuples(st.integers(40, 47), st.binary(max_size=4)), max_size=2, unique_by=lambda t: t[0]
).map(sorted)


def is_flexible(top: Any, v: int) -> bool:
    low = top.LOWEST_FLEXIBLE_VERSION
    return low is not None and v >= low


def primitive(t: str) -> st.SearchStrategy[Any]:
    if t == "bool":
        return st.booleans()
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        return st.integers(lo, hi)
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.integers(0, 2**128 - 1).map(lambda n: UUID(int=n))
    if t == "string":
        return _TEXT
    if t in ("bytes", "records"):
        return st.binary(max_size=16)
    raise AssertionError(f"unknown primitive type {t}")


def struct_strategy(c: Any, v: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in c.FIELDS:
        if not in_range(f.versions, v):
            continue
        if f.type.startswith("[]"):
            elem = (
                struct_strategy(f.struct, v, flexible, depth + 1)
                if f.struct is not None
                else primitive(f.type[2:])
            )
            s: st.SearchStrategy[Any] = st.lists(elem, max_size=3 if depth == 0 else 2)
        elif f.struct is not None:
            s = struct_strategy(f.struct, v, flexible, depth + 1)
        else:
            s = primitive(f.type)
        if in_range(f.nullable_versions, v):
            s = st.none() | s
        kwargs[f.attr] = s
    if flexible:
        kwargs["unknown_tagged_fields"] = UNKNOWN_TAGS
    return st.builds(c, **kwargs)


def message_strategy(top: Any, v: int) -> st.SearchStrategy[Any]:
    return struct_strategy(top, v, is_flexible(top, v))


def _sample_primitive(t: str, seed: int) -> Any:
    if t == "bool":
        return True
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        return min(hi, max(lo, 3 + seed))
    if t == "float64":
        return 1.5 + seed
    if t == "uuid":
        return U1
    if t == "string":
        return "ab" + "x" * (seed % 3)
    if t in ("bytes", "records"):
        return bytes(range(1, 4 + seed % 3))
    raise AssertionError(f"unknown primitive type {t}")


def populated(c: Any, v: int, flexible: bool, seed: int = 0) -> Any:
    """A deterministic object with a non-default, non-null value in every field present at ``v`` (arrays hold two
    elements) and, when flexible, one unknown tagged field per struct."""
    obj = c()
    for i, f in enumerate(c.FIELDS):
        if not in_range(f.versions, v):
            continue
        k = seed + i
        if f.type.startswith("[]"):
            if f.struct is not None:
                value: Any = [populated(f.struct, v, flexible, k), populated(f.struct, v, flexible, k + 1)]
            else:
                value = [_sample_primitive(f.type[2:], k), _sample_primitive(f.type[2:], k + 1)]
        elif f.struct is not None:
            value = populated(f.struct, v, flexible, k)
        else:
            value = _sample_primitive(f.type, k)
        setattr(obj, f.attr, value)
    if flexible:
        obj.unknown_tagged_fields = [(45, b"\x07\x08")]
    return obj
