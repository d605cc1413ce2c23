"""Shared helpers for the message-layer tests.

Contracts relied on (docs/CONTRACTS.md, "Generated code"):
1. ``generated.messages.by_name`` returns the top-level class of a spec; nested struct classes live in the
   same module, named by their spec type.
2. Every struct class exposes ``FIELDS`` (``kwire.codec.FieldInfo`` in spec order) and
   ``unknown_tagged_fields``; version ranges are inclusive with 32767 for "N+".
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any
from uuid import UUID

import pytest

# Fixed, non-default directory ids used by the goldens (written out byte by byte there).
U1 = UUID("00112233-4455-6677-8899-aabbccddeeff")
U2 = UUID("ffeeddcc-bbaa-9988-7766-554433221100")
U1_HEX = "00112233445566778899aabbccddeeff"
U2_HEX = "ffeeddccbbaa99887766554433221100"

# ASCII of names used in several goldens, spelled out once.
META = "__cluster_metadata"
META_HEX = "5f5f636c75737465725f6d65746164617461"  # 18 bytes
LOCALHOST_HEX = "6c6f63616c686f7374"  # "localhost", 9 bytes
CONTROLLER_HEX = "434f4e54524f4c4c4552"  # "CONTROLLER", 10 bytes


def messages() -> ModuleType:
    """The generated registry, or skip the calling test while codegen has not produced it yet."""
    try:
        return importlib.import_module("generated.messages")
    except ImportError as e:  # pragma: no cover - only before generated/ exists
        pytest.skip(f"generated.messages is not available yet: {e}")


def cls(name: str) -> Any:
    """Top-level class of the spec called ``name``."""
    return messages().by_name(name)


def struct(top: str, name: str) -> Any:
    """Nested/common struct class ``name`` from the module that defines spec ``top``."""
    mod = sys.modules[cls(top).__module__]
    return getattr(mod, name)


# Fragments shared by several goldens (flexible encodings), written field by field.
NODE_EP = (
    "01"  # tagged fields: 1 present
    "00"  # tag 0 = NodeEndpoints
    "12"  # payload size 18 bytes
    "02"  # NodeEndpoints: compact array, 1 element
    "00000001"  # NodeId 1
    "0a {LOCALHOST}"  # Host: compact string, len 9 (+1), "localhost"
    "2385"  # Port 9093 as uint16
    "00"  # NodeEndpoint tags
)
LEADER_EP = (
    "02"  # endpoint list: compact array, 1 element (a regular, untagged field)
    "0b {CONTROLLER}"  # Name: compact string, len 10 (+1), "CONTROLLER"
    "0a {LOCALHOST}"  # Host "localhost"
    "2385"  # Port 9093 (uint16)
    "00"  # endpoint struct tags
)
_TOKENS = {
    "META": META_HEX,
    "LOCALHOST": LOCALHOST_HEX,
    "CONTROLLER": CONTROLLER_HEX,
    "U1": U1_HEX,
    "U2": U2_HEX,
    "NODE_EP": NODE_EP,
    "LEADER_EP": LEADER_EP,
}


def hx(text: str) -> bytes:
    """Bytes from hex written with arbitrary whitespace; ``{META}``-style tokens expand to the constants above
    (fragments may themselves contain tokens)."""
    for _ in range(3):
        text = text.format(**_TOKENS)
    return bytes.fromhex("".join(text.split()))


def versions_of(c: Any) -> range:
    return range(c.LOWEST_VERSION, c.HIGHEST_VERSION + 1)


def in_range(rng: tuple[int, int] | None, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def all_class_versions() -> list[tuple[Any, int]]:
    """Every (top-level class, version) pair the registry knows about."""
    try:
        reg = importlib.import_module("generated.messages")
    except ImportError:
        return []
    return [(c, v) for c in reg.ALL_CLASSES for v in versions_of(c)]


def pair_id(p: tuple[Any, int]) -> str:
    return f"{p[0].NAME}-v{p[1]}"


def check_golden(obj: Any, version: int, golden: bytes) -> None:
    """The golden is the exact encoding of ``obj`` and decodes back to an equal object."""
    assert obj.encode(version).hex() == golden.hex()
    assert type(obj).decode(golden, version) == obj
