"""Seeded random message objects built from the generated classes' FIELDS metadata.

A sample for (class, version) sets every field present in that version to a random valid value: nullable fields are
sometimes None, integers span their full range, strings are arbitrary unicode, arrays hold 0-3 elements and nested
structs recurse. Unknown tagged fields stay empty (peers such as kafka-python drop them).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_ALPHABET = "abcXYZ_-.09é漢🙂"


def in_range(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def primitive(kind: str, rnd: random.Random) -> Any:
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        return rnd.choice((lo, hi, 0, -1 if lo < 0 else 1, rnd.randint(lo, hi)))
    if kind == "bool":
        return rnd.random() < 0.5
    if kind == "float64":
        return rnd.choice((0.0, -1.5, 3.25e10, rnd.uniform(-1e6, 1e6)))
    if kind == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128))
    if kind == "string":
        return "".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(0, 12)))
    if kind in ("bytes", "records"):
        return rnd.randbytes(rnd.randint(0, 40))
    raise ValueError(f"no sampler for type {kind}")


def sample(cls: Any, version: int, rnd: random.Random, depth: int = 0) -> Any:
    kwargs: dict[str, Any] = {}
    for field in cls.FIELDS:
        if not in_range(field.versions, version):
            continue
        if field.tagged_versions is not None and not in_range(field.tagged_versions, version):
            continue
        if in_range(field.nullable_versions, version) and rnd.random() < 0.25:
            kwargs[field.attr] = None
            continue
        kind: str = field.type
        if kind.startswith("[]"):
            count = rnd.randint(0, 3 if depth < 3 else 1)
            if field.struct is not None:
                kwargs[field.attr] = [sample(field.struct, version, rnd, depth + 1) for _ in range(count)]
            else:
                kwargs[field.attr] = [primitive(kind[2:], rnd) for _ in range(count)]
        elif field.struct is not None:
            kwargs[field.attr] = sample(field.struct, version, rnd, depth + 1)
        else:
            kwargs[field.attr] = primitive(kind, rnd)
    return cls(**kwargs)
