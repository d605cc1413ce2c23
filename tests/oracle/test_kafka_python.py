"""kafka-python 3.0.12 as an independent oracle for every message and version both implementations define.

For each (message, version), hypothesis draws objects of every field present in that version (no unknown tags:
kafka-python drops them), and:
1. ours -> bytes -> kafka-python decodes the same field values;
2. the same values built in kafka-python -> bytes -> we decode the same values;
3. both encodings of the same values are byte-identical.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generated import messages
from kraftd.testing.kp_bridge import KP_CLASSES, as_plain, from_kp, to_kp
from tests.messages.strategies import struct_strategy

# each test runs on the compiled codec engine and on the pure-Python generated code (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("codec_path")

EXAMPLES = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _cases() -> list[tuple[str, int]]:
    cases = []
    for name, kp_cls in KP_CLASSES.items():
        ours = messages.by_name(name)
        lo = max(ours.LOWEST_VERSION, kp_cls.valid_versions[0])
        hi = min(ours.HIGHEST_VERSION, kp_cls.valid_versions[1])
        cases.extend((name, v) for v in range(lo, hi + 1))
    return cases


CASES = _cases()


def _sample(name: str, version: int, data: st.DataObject) -> Any:
    obj = data.draw(struct_strategy(messages.by_name(name), version, flexible=False))
    if name == "ApiVersionsResponse":
        # kafka-python (like Kafka's client) reads any error response body as v0 (KIP-511 fallback).
        obj.error_code = 0
    return obj


def test_every_shared_message_is_covered() -> None:
    names = {n for n, _ in CASES}
    assert names == set(KP_CLASSES)
    assert ("FetchRequest", 18) in CASES and ("FetchRequest", 4) in CASES
    assert ("MetadataRequest", 3) not in CASES  # kafka-python widened Metadata to 0-13; upstream is 4-13


@pytest.mark.parametrize(("name", "version"), CASES)
@EXAMPLES
@given(data=st.data())
def test_ours_decoded_by_kafka_python(name: str, version: int, data: st.DataObject) -> None:
    obj = _sample(name, version, data)
    decoded = KP_CLASSES[name].decode(obj.encode(version), version=version)
    assert as_plain(from_kp(decoded, type(obj), version), version) == as_plain(obj, version)


@pytest.mark.parametrize(("name", "version"), CASES)
@EXAMPLES
@given(data=st.data())
def test_kafka_python_decoded_by_ours(name: str, version: int, data: st.DataObject) -> None:
    obj = _sample(name, version, data)
    theirs = bytes(to_kp(obj, KP_CLASSES[name], version).encode(version=version))
    assert as_plain(type(obj).decode(theirs, version), version) == as_plain(obj, version)


@pytest.mark.parametrize(("name", "version"), CASES)
@EXAMPLES
@given(data=st.data())
def test_same_values_same_bytes(name: str, version: int, data: st.DataObject) -> None:
    obj = _sample(name, version, data)
    assert obj.encode(version) == bytes(to_kp(obj, KP_CLASSES[name], version).encode(version=version))
