"""Lowering: one spec → flat per-version encode/decode function bodies (Python source lines).

Semantics are Kafka's MessageDataGenerator (PROTOCOL-FACTS §6.2):
1. Each (struct, version) gets a writer ``_w_<S>_<v>(out, o)`` and reader ``_r_<S>_<v>(d, p)`` with every
   version branch resolved here; versions whose bodies are identical share one function. Writers append
   ``bytes`` parts to the list ``out``; the top-level method joins them once (records are copied once).
2. Consecutive fixed-width regular fields are packed/unpacked with one precompiled ``struct.Struct``; the
   length prefix that follows such a run (compact: its first byte) is unpacked with it, and a compact array
   count that follows one is packed with it while the count fits in one byte.
3. Flexible versions use compact lengths (unsigned varint of length+1, 0 = null) unless a field-level
   flexibleVersions override says otherwise; non-flexible: int16 string lengths, int32 bytes/array lengths.
4. Nullable structs carry an int8 marker (-1 null / 1 present) in regular positions and an unsigned varint
   marker (0 null / 1 present) inside a tagged field.
5. Tagged fields are written only when non-default, ascending by tag, merged with retained unknown tags.
   Reading a known tag that is not valid in the version fails; unknown tags are kept.
6. A non-ignorable field absent from the version must hold its default, else MessageEncodeError; ignorable
   ones are dropped. Unknown tags set on a non-flexible version fail. Error texts carry no version number
   (the top-level method appends it) so identical layouts stay shareable.
7. Readers check every length against the bytes that remain before slicing, and an array count against the
   remaining byte count (each element takes at least one byte), so no allocation exceeds the input.
8. Small struct-array element bodies are inlined into the parent loop (locals prefixed "<field>__" so names
   never collide, single underscores being the only ones snake_case produces); functions left uncalled
   are pruned. Decoded objects are built with ``object.__new__`` and slot stores (every slot assigned).
"""

from __future__ import annotations

import re

from codegen.lower_base import Func, StructOut
from codegen.lower_read import Reader
from codegen.lower_write import Writer


class Lowerer(Writer, Reader):
    """Lowers one spec: ``lower()`` fills ``funcs`` and the per-struct version → function tables."""

    def lower(self) -> None:
        for s in self.spec.all_structs():
            out = StructOut(s)
            self.structs[s.name] = out
            for kind, build, table in (("w", self.writer, out.writers), ("r", self.reader, out.readers)):
                bodies: dict[str, str] = {}
                for v in self.versions:
                    lines = build(s, v)
                    key = "\n".join(lines)
                    if key not in bodies:
                        bodies[key] = f"_{kind}_{s.name}_{v}"
                        if kind == "w":
                            self.funcs.append(
                                Func(bodies[key], f"out: list[bytes], o: {s.name}", "None", lines)
                            )
                        else:
                            self.funcs.append(
                                Func(bodies[key], "d: bytes, p: int", f"tuple[{s.name}, int]", lines)
                            )
                    table[v] = bodies[key]
        self.prune()

    def prune(self) -> None:
        """Drop functions nothing calls: nested struct arrays are inlined, so most per-struct functions
        are only needed for tagged or single struct fields (keeps generated modules small)."""
        top = self.structs[self.spec.struct.name]
        keep = set(top.writers.values()) | set(top.readers.values())
        by_name = {f.name: f for f in self.funcs}
        todo = list(keep)
        ref = re.compile(r"\b(_[wr]_[A-Za-z0-9]+_\d+)\(")
        while todo:
            for name in ref.findall("\n".join(by_name[todo.pop()].lines)):
                if name not in keep:
                    keep.add(name)
                    todo.append(name)
        self.funcs = [f for f in self.funcs if f.name in keep]
