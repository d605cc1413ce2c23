"""Shared state and helpers of the lowering step (see codegen/lower.py for the semantics)."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen.model import FIXED_CODES, FieldSpec, MessageSpec, StructSpec
from codegen.names import Defaults

# Struct-array element bodies up to this many lines are inlined into the parent's loop.
INLINE_MAX_LINES = 260


@dataclass
class Func:
    name: str
    params: str
    ret: str
    lines: list[str]


@dataclass
class StructOut:
    spec: StructSpec
    writers: dict[int, str] = field(default_factory=dict)  # version -> function name
    readers: dict[int, str] = field(default_factory=dict)


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)


class LowerBase:
    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.defaults = Defaults()
        self.structs: dict[str, StructOut] = {}
        self.funcs: list[Func] = []
        self.formats: dict[str, set[str]] = {}  # struct format -> {"P", "U"} aliases needed
        self.arrays: set[str] = set()  # struct codes needing array (un)packer tables
        assert spec.valid is not None
        self.versions = list(range(spec.valid.lo, spec.valid.hi + 1))

    # ---- helpers -------------------------------------------------------------------------------------
    def _fmt(self, codes: str, kind: str) -> str:
        """Register a precompiled big-endian Struct for ``codes``; return its pack ("P"), unpack_from ("U")
        or iter_unpack ("I") alias name (only the aliases actually used are emitted)."""
        self.formats.setdefault(codes, set()).add(kind)
        return f"_{kind}_" + codes.replace("?", "o")

    def pk(self, codes: str) -> str:
        return self._fmt(codes, "P")

    def upk(self, codes: str) -> str:
        return self._fmt(codes, "U")

    def iupk(self, codes: str) -> str:
        return self._fmt(codes, "I")

    def arr(self, elem: str, kind: str) -> str:
        """Per-count array table for fixed-width ``elem``: packer "P" (any count), packer tuple "T" (counts
        below 127), unpacker "U"."""
        code = FIXED_CODES[elem]
        self.arrays.add(code)
        return f"_A{kind}_{code.replace('?', 'o')}"

    def compact(self, f: FieldSpec, v: int) -> bool:
        if not self.spec.is_flexible(v):
            return False
        return not f.has_flexible_override or (f.flexible is not None and v in f.flexible)

    @staticmethod
    def nullable(f: FieldSpec, v: int) -> bool:
        return f.nullable is not None and v in f.nullable

    @staticmethod
    def present(f: FieldSpec, v: int) -> bool:
        return f.versions is not None and v in f.versions

    @staticmethod
    def tagged(f: FieldSpec, v: int) -> bool:
        return f.tagged is not None and v in f.tagged

    def inline_ok(self, s: StructSpec, v: int, kind: str) -> bool:
        """Inline struct-array elements whose own body is small: that saves a call per element where it
        matters, while big element bodies stay shared functions (bounds generated-module size)."""
        name = self.fn(s, v, kind)
        body = next(f for f in self.funcs if f.name == name)
        return len(body.lines) <= INLINE_MAX_LINES

    def fn(self, s: StructSpec, v: int, kind: str) -> str:
        return (self.structs[s.name].writers if kind == "w" else self.structs[s.name].readers)[v]
