"""The parsed form of a Kafka message spec (what parse.py builds and validate.py/emit.py consume).

Invariants:
1. Version ranges are inclusive; "N+" is stored with upper bound ``VERSION_MAX`` (Kafka's Short.MAX_VALUE).
2. "none" parses to ``None`` (an empty range) everywhere a range is optional.
3. Every raw value a spec gives as a JSON number or boolean has been coerced to its string spelling
   (Kafka's Jackson coercion), so ``default`` and friends are always ``str | None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

VERSION_MAX = 32767

PRIMITIVES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "uuid",
        "string",
        "bytes",
        "records",
    }
)
# Fixed-width types and their struct format codes (big-endian, network order).
FIXED_CODES = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}
# Integer ranges used for default range checks.
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


class SpecError(Exception):
    """A spec file is malformed; the message names the file and the offending field or key."""


@dataclass(frozen=True)
class Versions:
    lo: int
    hi: int

    def __contains__(self, v: object) -> bool:
        return isinstance(v, int) and self.lo <= v <= self.hi

    @property
    def open_ended(self) -> bool:
        return self.hi == VERSION_MAX

    def contains_range(self, other: Versions) -> bool:
        return self.lo <= other.lo and other.hi <= self.hi

    def intersect(self, other: Versions | None) -> Versions | None:
        if other is None:
            return None
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return Versions(lo, hi) if lo <= hi else None

    def as_tuple(self) -> tuple[int, int]:
        return (self.lo, self.hi)

    def __str__(self) -> str:
        if self.hi == VERSION_MAX:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


_VERSIONS_RE = re.compile(r"^(\d+)(?:(\+)|-(\d+))?$")


def parse_versions(text: str) -> Versions | None:
    """Parse Kafka's version syntax: "N", "N-M", "N+", "none". Raises ValueError on anything else."""
    text = text.strip()
    if text == "none":
        return None
    m = _VERSIONS_RE.match(text)
    if m is None:
        raise ValueError(f"invalid version range {text!r}")
    lo = int(m.group(1))
    hi = VERSION_MAX if m.group(2) else int(m.group(3)) if m.group(3) is not None else lo
    if lo > VERSION_MAX or hi > VERSION_MAX or lo > hi:
        raise ValueError(f"invalid version range {text!r}")
    return Versions(lo, hi)


@dataclass
class FieldSpec:
    name: str
    type: str
    versions: Versions | None
    nullable: Versions | None = None
    tagged: Versions | None = None
    tag: int | None = None
    ignorable: bool = False
    default: str | None = None
    map_key: bool = False
    flexible: Versions | None = None  # field-level flexibleVersions override
    has_flexible_override: bool = False
    fields: list[FieldSpec] | None = None  # inline struct definition
    struct: StructSpec | None = None  # resolved struct for struct / []struct types
    about: str = ""

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def elem(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return not self.is_array and self.type not in PRIMITIVES

    @property
    def is_struct_array(self) -> bool:
        return self.is_array and self.elem not in PRIMITIVES


@dataclass
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec]
    common: bool = False


@dataclass
class MessageSpec:
    path: str
    name: str
    type: str
    api_key: int | None
    valid: Versions | None
    flexible: Versions | None
    struct: StructSpec
    common_structs: list[StructSpec] = field(default_factory=list)
    listeners: list[str] = field(default_factory=list)
    latest_version_unstable: bool = False
    header_versions: list[tuple[Versions, int]] | None = None

    def is_flexible(self, v: int) -> bool:
        return self.flexible is not None and v in self.flexible

    def all_structs(self) -> list[StructSpec]:
        """Every struct reachable from the top level (and every common struct), children before parents,
        each object once (same-named distinct structs are both returned so validation can reject them)."""
        seen: list[StructSpec] = []

        def visit(s: StructSpec) -> None:
            if any(x is s for x in seen):
                return
            for f in s.fields:
                if f.struct is not None:
                    visit(f.struct)
            if not any(x is s for x in seen):
                seen.append(s)

        for c in self.common_structs:
            visit(c)
        visit(self.struct)
        return seen
