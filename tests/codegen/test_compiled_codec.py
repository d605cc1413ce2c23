"""The compiled codec engine (kwire/_fastcodec.pyx) against the pure-Python generated code it stands in for.

The pure-Python writers and readers are the reference (kwire/fastpath.py, contract 1). For every message and
version, hypothesis draws objects and byte strings, and both paths must agree exactly: the same bytes, equal
decoded objects, and the same exception type and text on bad input. Objects without unknown tagged fields
must run compiled end to end (the engine's fallback counter does not move), so a silent decline of a whole
message or version fails here too.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generated.messages import ALL_CLASSES
from kwire import fastpath
from tests.messages.strategies import struct_strategy

ROOT = Path(__file__).resolve().parents[2]

if os.environ.get("KRAFTD_PURE_PYTHON", "") not in ("", "0"):
    pytest.skip("KRAFTD_PURE_PYTHON is set: only the pure-Python codec runs", allow_module_level=True)
if fastpath.ENGINE is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("kwire._fastcodec is not built; under CI the compiled codec must be tested")
    pytest.skip(
        "kwire._fastcodec is not built (run scripts/setup.sh with a C compiler)", allow_module_level=True
    )

INSTALLED = [c for c in ALL_CLASSES if c.__dict__["encode"] is fastpath.ENGINE.fast_encode]
CASES = [(c, v) for c in INSTALLED for v in range(c.LOWEST_VERSION, c.HIGHEST_VERSION + 1)]
EXAMPLES = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _id(case: tuple[type, int]) -> str:
    return f"{case[0].__name__}-v{case[1]}"


@pytest.fixture(autouse=True)
def _compiled() -> Iterator[None]:
    before = fastpath.set_compiled(True)
    yield
    fastpath.set_compiled(before)


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the two paths must agree on any failure, whatever its type
        return type(e).__name__, str(e)


def _both(fn: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any], int]:
    """fn's outcome on the pure path, then on the compiled one, and how often the engine declined."""
    fastpath.set_compiled(False)
    pure = _outcome(fn)
    fastpath.set_compiled(True)
    before = fastpath.fallback_count()
    fast = _outcome(fn)
    return pure, fast, fastpath.fallback_count() - before


def test_every_message_is_compiled_at_every_version() -> None:
    assert INSTALLED == list(ALL_CLASSES)
    for cls, v in CASES:
        assert fastpath.ENGINE.register(cls).supported(v), f"{cls.__name__} v{v} is not compiled"


def test_set_compiled_swaps_methods() -> None:
    cls = INSTALLED[0]
    fastpath.set_compiled(False)
    assert cls.__dict__["encode"] is not fastpath.ENGINE.fast_encode and not fastpath.compiled()
    fastpath.set_compiled(True)
    assert cls.__dict__["encode"] is fastpath.ENGINE.fast_encode and fastpath.compiled()


@pytest.mark.parametrize("case", CASES, ids=_id)
@EXAMPLES
@given(data=st.data())
def test_same_bytes_and_objects_as_pure(case: tuple[type, int], data: st.DataObject) -> None:
    cls, v = case
    obj = data.draw(struct_strategy(cls, v, flexible=False))
    pure, fast, declined = _both(lambda: obj.encode(v))
    assert fast == pure
    assert declined == 0, "the engine declined an object without unknown tagged fields"
    assert pure[0] == "ok"
    enc = pure[1]
    pure_obj, fast_obj, declined = _both(lambda: cls.decode(enc, v))
    assert fast_obj == pure_obj == ("ok", obj)
    assert declined == 0
    out = bytearray(b"\x09")
    obj.write(out, v)
    assert bytes(out) == b"\x09" + enc
    assert cls.read(bytes(out) + b"\x00", 1, v) == (obj, len(out))


@pytest.mark.parametrize("case", CASES, ids=_id)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_unknown_tagged_fields_same_as_pure(case: tuple[type, int], data: st.DataObject) -> None:
    """Writing unknown tags is left to the pure path; reading them is compiled."""
    cls, v = case
    low = cls.LOWEST_FLEXIBLE_VERSION
    obj = data.draw(struct_strategy(cls, v, flexible=low is not None and v >= low))
    pure, fast, _ = _both(lambda: obj.encode(v))
    assert fast == pure and pure[0] == "ok"
    pure_obj, fast_obj, declined = _both(lambda: cls.decode(pure[1], v))
    assert fast_obj == pure_obj == ("ok", obj)
    assert declined == 0


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32), data=st.binary(max_size=48))
def test_garbage_decodes_the_same(seed: int, data: bytes) -> None:
    cls, v = random.Random(seed).choice(CASES)
    pure, fast, _ = _both(lambda: cls.decode(data, v))
    assert fast == pure


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    seed=st.integers(0, 2**32),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=3),
    cut=st.integers(0, 8),
)
def test_mutated_encodings_decode_the_same(
    data: st.DataObject, seed: int, flips: list[tuple[int, int]], cut: int
) -> None:
    cls, v = random.Random(seed).choice(CASES)
    obj = data.draw(struct_strategy(cls, v, flexible=False))
    enc = bytearray(obj.encode(v))
    if enc:
        for pos, val in flips:
            enc[pos % len(enc)] = val
    mutated = bytes(enc[: len(enc) - cut] if cut <= len(enc) else b"")
    pure, fast, _ = _both(lambda: cls.decode(mutated, v))
    assert fast == pure


# Values the pure writers reject or treat specially: the compiled path must give the same result or error.
ODD_VALUES: list[Any] = [
    None,
    -1,
    2**31,
    -(2**63) - 1,
    2**64,
    1.5,
    float("nan"),
    True,
    "x" * 40000,
    "\ud800",
    b"\x00" * 3,
    bytearray(b"ab"),
    [],
    [None],
    [1, "a"],
    (1, 2),
    UUID(int=5),
    object(),
]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_odd_values_encode_the_same(case: tuple[type, int]) -> None:
    cls, v = case
    rng = random.Random(v)
    for f in cls.FIELDS:
        for value in rng.sample(ODD_VALUES, 6):
            obj = cls()
            setattr(obj, f.attr, value)
            pure, fast, _ = _both(lambda o=obj: o.encode(v))
            assert fast == pure, (f.attr, value)


def _nested(cls: type) -> Iterator[tuple[type, Any]]:
    for f in cls.FIELDS:
        if f.struct is not None:
            yield f.struct, f
            yield from _nested(f.struct)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_odd_values_in_nested_structs_encode_the_same(case: tuple[type, int]) -> None:
    cls, v = case
    for f in cls.FIELDS:
        if f.struct is None:
            continue
        for g in f.struct.FIELDS:
            for value in (None, -1, 2**40, "s", [], object()):
                inner = f.struct()
                setattr(inner, g.attr, value)
                obj = cls()
                setattr(obj, f.attr, [inner] if f.type.startswith("[]") else inner)
                pure, fast, _ = _both(lambda o=obj: o.encode(v))
                assert fast == pure, (f.attr, g.attr, value)


def test_read_and_write_edges_match_pure() -> None:
    cls, v = next((c, v) for c, v in CASES if c.__name__ == "FetchResponse" and v == 16)
    enc = cls().encode(v)
    for offset in (-1, len(enc) + 1, 1.0):
        pure, fast, _ = _both(lambda o=offset: cls.read(enc, o, v))
        assert fast == pure and fast[0] != "ok"
    for data in (memoryview(enc), bytearray(enc), "text"):
        pure, fast, _ = _both(lambda d=data: cls.decode(d, v))
        assert fast == pure
    pure, fast, _ = _both(lambda: cls().write([], v))  # not a bytearray: the pure path decides
    assert fast == pure
    for version in (None, "16", 3, 19):
        pure, fast, _ = _both(lambda ver=version: cls().encode(ver))
        assert fast == pure and fast[0] != "ok"


def test_large_and_shrinking_messages_match_pure() -> None:
    """Buffers grow past the size remembered from the previous encoding, and shrink again."""
    from generated.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData

    for size in (10, 300_000, 70_000, 5, 1 << 20, 0):
        parts = [PartitionData(partition_index=i, records=bytes([i % 251]) * size) for i in range(3)]
        obj = FetchResponse(responses=[FetchableTopicResponse(topic_id=UUID(int=size), partitions=parts)])
        for v in (4, 12, 16):
            pure, fast, declined = _both(lambda o=obj, ver=v: o.encode(ver))
            assert fast == pure and fast[0] == "ok" and declined == 0
            back, fast_back, declined = _both(lambda data=pure[1], ver=v: FetchResponse.decode(data, ver))
            assert fast_back == back and declined == 0


def test_subclass_instances_use_the_codec_of_their_generated_base() -> None:
    cls = next(c for c in INSTALLED if c.__name__ == "VoteResponse")
    sub = type("MyVote", (cls,), {"__slots__": ()})
    obj = sub(error_code=7)
    pure, fast, declined = _both(lambda: obj.encode(1))
    assert fast == pure and declined == 0


def test_pure_python_env_switch(tmp_path: Path) -> None:
    code = (
        "from kwire import fastpath; from generated.fetch_response import FetchResponse as F; "
        "print(fastpath.ENGINE is None, fastpath.compiled(), F.encode is fastpath.ENGINE.fast_encode "
        "if fastpath.ENGINE else False)"
    )
    env = dict(os.environ, KRAFTD_PURE_PYTHON="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False"]
    env["KRAFTD_PURE_PYTHON"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]


def test_kitchen_sink_fixture_messages_match_pure(cgfx: ModuleType) -> None:
    """The fixture specs exercise every field kind, nullable and tagged structs, and defaults."""
    import importlib

    classes = []
    for name in ("kitchen_sink_request", "kitchen_sink_response", "plain_data_record"):
        mod = importlib.import_module(f"cgfx.{name}")
        top = next(
            c for c in vars(mod).values() if isinstance(c, type) and getattr(c, "NAME", None) and c.FIELDS
        )
        classes.append(top)
    for cls in classes:
        assert cls.__dict__["encode"] is fastpath.ENGINE.fast_encode
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            assert fastpath.ENGINE.register(cls).supported(v)
            _fixture_check(cls, v)()


def _fixture_check(cls: type, v: int) -> Callable[[], None]:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(obj=struct_strategy(cls, v, flexible=False))
    def check(obj: Any) -> None:
        pure, fast, declined = _both(lambda: obj.encode(v))
        assert fast == pure and declined == 0
        if pure[0] == "ok":
            back, fast_back, declined = _both(lambda: cls.decode(pure[1], v))
            assert fast_back == back == ("ok", obj) and declined == 0

    return check


def test_failed_compile_falls_back_with_one_line(tmp_path: Path) -> None:
    """setup.py: a compiler failure is reported on one line and the build still succeeds (pure Python)."""
    env = dict(os.environ, CC="/bin/false")
    env.pop("KRAFTD_PURE_PYTHON", None)
    args = ["build_ext", "--build-lib", str(tmp_path / "lib"), "--build-temp", str(tmp_path / "tmp")]
    proc = subprocess.run(
        [sys.executable, "setup.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if ln.startswith("kraftd: compiled codec not built")]
    assert len(notes) == 1 and "the pure-Python codec will be used" in notes[0], proc.stderr
    assert not list((tmp_path / "lib").rglob("_fastcodec*.so"))
