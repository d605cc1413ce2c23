"""Property: any object whose fields are valid for a version survives encode → decode at that version.

Objects are drawn from the FIELDS metadata alone, so this covers the fixture and every real spec."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.model import INT_RANGES
from generated.messages import ALL_CLASSES
from kwire.codec import FieldInfo

RANGES = INT_RANGES


def scalar(t: str) -> st.SearchStrategy[Any]:
    if t in RANGES:
        return st.integers(*RANGES[t])
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.integers(0, 2**128 - 1).map(lambda i: UUID(int=i))
    if t == "string":
        return st.text(max_size=12)
    return st.binary(max_size=20)  # bytes, records


def within(rng: tuple[int, int] | None, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


UNKNOWN_TAGS = st.dictionaries(st.integers(64, 300), st.binary(max_size=4), max_size=2).map(
    lambda d: sorted(d.items())
)


def instance(cls: type, v: int, flex: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    fi: FieldInfo
    for fi in cls.FIELDS:
        if not within(fi.versions, v):
            continue
        if fi.struct is not None:
            elem = instance(fi.struct, v, flex, depth + 1)
            base = st.lists(elem, max_size=2 if depth < 2 else 0) if fi.type.startswith("[]") else elem
        elif fi.type.startswith("[]"):
            base = st.lists(scalar(fi.type[2:]), max_size=3)
        else:
            base = scalar(fi.type)
        kwargs[fi.attr] = st.one_of(st.none(), base) if within(fi.nullable_versions, v) else base
    if flex:
        kwargs["unknown_tagged_fields"] = UNKNOWN_TAGS
    return st.builds(cls, **kwargs)


@st.composite
def case(draw: st.DrawFn, classes: tuple[type, ...]) -> tuple[type, int, Any]:
    cls = draw(st.sampled_from(classes))
    v = draw(st.integers(cls.LOWEST_VERSION, cls.HIGHEST_VERSION))
    flex = cls.LOWEST_FLEXIBLE_VERSION is not None and v >= cls.LOWEST_FLEXIBLE_VERSION
    return cls, v, draw(instance(cls, v, flex))


@settings(max_examples=400, deadline=None)
@given(c=case(ALL_CLASSES))
def test_real_specs_round_trip(c: tuple[type, int, Any]) -> None:
    cls, v, obj = c
    enc = obj.encode(v)
    assert cls.decode(enc, v) == obj
    assert cls.decode(enc, v).encode(v) == enc


def test_fixture_round_trip(cgfx: ModuleType) -> None:
    classes = tuple(importlib.import_module("cgfx.messages").ALL_CLASSES)

    @settings(max_examples=300, deadline=None)
    @given(c=case(classes))
    def check(c: tuple[type, int, Any]) -> None:
        cls, v, obj = c
        enc = obj.encode(v)
        assert cls.decode(enc, v) == obj

    check()
