"""Lowering: one spec → flat per-version encode/decode function bodies (Python source lines).

Semantics are Kafka's MessageDataGenerator (PROTOCOL-FACTS §6.2):
1. Each (struct, version) gets a writer ``_w_<S>_<v>(out, o)`` and reader ``_r_<S>_<v>(d, p)`` with every
   version branch resolved here; versions whose bodies are identical share one function.
2. Consecutive fixed-width regular fields are packed/unpacked with one precompiled ``struct.Struct``.
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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen.model import FIXED_CODES, FIXED_SIZES, FieldSpec, MessageSpec, StructSpec
from codegen.names import Defaults, any_nullable, default_is_none, elem_pytype, pytype, snake


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


class Lowerer:
    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.defaults = Defaults()
        self.structs: dict[str, StructOut] = {}
        self.funcs: list[Func] = []
        self.formats: dict[str, str] = {}  # struct format -> constant base name
        self.arrays: set[str] = set()  # struct codes needing array (un)packer tables
        assert spec.valid is not None
        self.versions = list(range(spec.valid.lo, spec.valid.hi + 1))

    # ---- helpers -------------------------------------------------------------------------------------
    def fmt(self, codes: str) -> str:
        """Name of the precompiled Struct for big-endian ``codes`` (registers _S_/_P_/_U_ constants)."""
        if codes not in self.formats:
            self.formats[codes] = "_" + codes.replace("?", "o")
        return self.formats[codes]

    def arr(self, elem: str, kind: str) -> str:
        """Name of the per-count array packer ("P") / unpacker ("U") table for fixed-width ``elem``."""
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

    def fn(self, s: StructSpec, v: int, kind: str) -> str:
        return (self.structs[s.name].writers if kind == "w" else self.structs[s.name].readers)[v]

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
                            self.funcs.append(Func(bodies[key], f"out: bytearray, o: {s.name}", "None", lines))
                        else:
                            self.funcs.append(Func(bodies[key], "d: bytes, p: int", f"tuple[{s.name}, int]", lines))
                    table[v] = bodies[key]

    # ---- writing -------------------------------------------------------------------------------------
    def writer(self, s: StructSpec, v: int) -> list[str]:
        L = Lines()
        self.write_struct(L, 0, s, v, "o", "")
        return L.lines

    def write_struct(self, L: Lines, ind: int, s: StructSpec, v: int, obj: str, pfx: str) -> None:
        """Write struct ``s`` held in ``obj`` to ``out``; locals are prefixed with ``pfx`` (inlining)."""
        start = len(L.lines)
        flex = self.spec.is_flexible(v)
        for f in s.fields:
            if not self.present(f, v) and not f.ignorable:
                L(ind, f"if {self.defaults.nondefault(f, f'{obj}.{snake(f.name)}')}:")
                L(ind + 1, f'raise MessageEncodeError("Attempted to write a non-default {f.name}")')
        run: list[FieldSpec] = []
        for f in s.fields:
            if not self.present(f, v) or self.tagged(f, v):
                continue
            if f.type in FIXED_CODES:
                run.append(f)
                continue
            self.flush_write_run(L, ind, obj, run)
            run = []
            self.write_value(L, ind, "out", f"{obj}.{snake(f.name)}", f, v, pfx, in_tag=False)
        self.flush_write_run(L, ind, obj, run)
        if flex:
            self.write_tags(L, ind, s, v, obj, pfx)
        else:
            L(ind, f"if {obj}.unknown_tagged_fields:")
            L(ind + 1, 'raise MessageEncodeError("Tagged fields were set, but this version does not support them")')
        if len(L.lines) == start:
            L(ind, "pass")

    def flush_write_run(self, L: Lines, ind: int, obj: str, run: list[FieldSpec]) -> None:
        if not run:
            return
        codes = "".join(FIXED_CODES[f.type] for f in run)
        args = ", ".join(f"{obj}.{snake(f.name)}" + (".bytes" if f.type == "uuid" else "") for f in run)
        L(ind, f"out += _P{self.fmt(codes)}({args})")

    def write_len(self, L: Lines, ind: int, buf: str, n: str, compact: bool, width: str) -> None:
        if compact:
            L(ind, f"if {n} < 127:")
            L(ind + 1, f"{buf}.append({n} + 1)")
            L(ind, "else:")
            L(ind + 1, f"_wuv({buf}, {n} + 1)")
        else:
            L(ind, f"{buf} += _P{self.fmt(width)}({n})")

    def write_value(
        self, L: Lines, ind: int, buf: str, x: str, f: FieldSpec, v: int, pfx: str, in_tag: bool
    ) -> None:
        a = pfx + snake(f.name)
        nul = self.nullable(f, v)
        cmp = self.compact(f, v)
        t = f.type
        if t in FIXED_CODES:  # only reached for tagged values
            if t == "uuid":
                L(ind, f"{buf} += {x}.bytes")
            else:
                L(ind, f"{buf} += _P{self.fmt(FIXED_CODES[t])}({x})")
            return
        if nul:
            L(ind, f"if {x} is None:")
            if f.is_struct:
                L(ind + 1, f"{buf}.append({0 if in_tag else 255})")
                L(ind, "else:")
                L(ind + 1, f"{buf}.append(1)")
            elif cmp:
                L(ind + 1, f"{buf}.append(0)")
                L(ind, "else:")
            else:
                L(ind + 1, f"{buf} += _P{self.fmt('h' if t == 'string' else 'i')}(-1)")
                L(ind, "else:")
            ind += 1
        elif any_nullable(f) or default_is_none(f):
            L(ind, f"if {x} is None:")
            L(ind + 1, f'raise MessageEncodeError("non-nullable field {f.name} is None")')
        if f.is_struct:
            assert f.struct is not None
            L(ind, f"{self.fn(f.struct, v, 'w')}({buf}, {x})")
        elif f.is_array:
            L(ind, f"a_{a} = {x}")
            L(ind, f"n_{a} = len(a_{a})")
            self.write_len(L, ind, buf, f"n_{a}", cmp, "i")
            e = f.elem
            if f.struct is not None:
                L(ind, f"for e_{a} in a_{a}:")
                if buf == "out" and not in_tag:
                    self.write_struct(L, ind + 1, f.struct, v, f"e_{a}", f"{a}_")
                else:
                    L(ind + 1, f"{self.fn(f.struct, v, 'w')}({buf}, e_{a})")
            elif e == "uuid":
                L(ind, f"for e_{a} in a_{a}:")
                L(ind + 1, f"{buf} += e_{a}.bytes")
            elif e in FIXED_CODES:
                L(ind, f"{buf} += {self.arr(e, 'P')}[n_{a}](*a_{a})")
            else:
                L(ind, f"for e_{a} in a_{a}:")
                self.write_blob(L, ind + 1, buf, f"e_{a}", f"{a}_e", f.name, e, cmp)
        else:
            self.write_blob(L, ind, buf, x, a, f.name, t, cmp)

    def write_blob(self, L: Lines, ind: int, buf: str, x: str, a: str, name: str, t: str, cmp: bool) -> None:
        if t == "string":
            L(ind, f"s_{a} = {x}.encode()")
        else:
            L(ind, f"s_{a} = {x}")
        L(ind, f"n_{a} = len(s_{a})")
        if cmp:
            L(ind, f"if n_{a} < 127:")
            L(ind + 1, f"{buf}.append(n_{a} + 1)")
            L(ind, "else:")
            if t == "string":
                L(ind + 1, f"if n_{a} > 32767:")
                L(ind + 2, f'raise MessageEncodeError("string field {name} is too long to be serialized")')
            L(ind + 1, f"_wuv({buf}, n_{a} + 1)")
        else:
            L(ind, f"{buf} += _P{self.fmt('h' if t == 'string' else 'i')}(n_{a})")
        L(ind, f"{buf} += s_{a}")

    def write_tags(self, L: Lines, ind: int, s: StructSpec, v: int, obj: str, pfx: str) -> None:
        known = sorted((f for f in s.fields if self.tagged(f, v)), key=lambda f: f.tag or 0)
        if not known:
            L(ind, f"if {obj}.unknown_tagged_fields:")
            L(ind + 1, f"_wtags(out, {obj}.unknown_tagged_fields)")
            L(ind, "else:")
            L(ind + 1, "out.append(0)")
            return
        tags = f"tags_{pfx}"
        L(ind, f"{tags}: list[tuple[int, bytes | bytearray]] = list({obj}.unknown_tagged_fields)")
        for f in known:
            x = f"{obj}.{snake(f.name)}"
            L(ind, f"if {self.defaults.nondefault(f, x)}:")
            L(ind + 1, "tb = bytearray()")
            self.write_value(L, ind + 1, "tb", x, f, v, pfx, in_tag=True)
            L(ind + 1, f"{tags}.append(({f.tag}, tb))")
        L(ind, f"if {tags}:")
        L(ind + 1, f"_wtags(out, {tags})")
        L(ind, "else:")
        L(ind + 1, "out.append(0)")

    # ---- reading -------------------------------------------------------------------------------------
    def reader(self, s: StructSpec, v: int) -> list[str]:
        L = Lines()
        self.read_struct(L, 0, s, v, "", None)
        return L.lines

    def read_struct(self, L: Lines, ind: int, s: StructSpec, v: int, pfx: str, sink: str | None) -> None:
        """Read struct ``s``; then ``return obj, p`` (sink None) or ``<sink>(obj)`` when inlined."""
        flex = self.spec.is_flexible(v)
        run: list[FieldSpec] = []
        values: list[str] = []
        for f in s.fields:
            var = f"f_{pfx}{snake(f.name)}"
            if not self.present(f, v):
                values.append(self.defaults.expr(f))
                continue
            values.append(var)
            if self.tagged(f, v):
                continue
            if f.type in FIXED_CODES:
                run.append(f)
                continue
            self.flush_read_run(L, ind, run, pfx)
            run = []
            self.read_value(L, ind, var, f, v, pfx, in_tag=False)
        self.flush_read_run(L, ind, run, pfx)
        if flex:
            self.read_tags(L, ind, s, v, pfx)
            values.append(f"unk_{pfx}")
        else:
            values.append("[]")
        # Build the instance without running the dataclass __init__ (every slot is assigned here).
        ob = f"ob_{pfx}"
        L(ind, f"{ob} = _new({s.name})")
        attrs = [snake(f.name) for f in s.fields] + ["unknown_tagged_fields"]
        for attr, value in zip(attrs, values, strict=True):
            L(ind, f"{ob}.{attr} = {value}")
        L(ind, f"return {ob}, p" if sink is None else f"{sink}({ob})")

    def flush_read_run(self, L: Lines, ind: int, run: list[FieldSpec], pfx: str) -> None:
        if not run:
            return
        codes = "".join(FIXED_CODES[f.type] for f in run)
        names = [f"f_{pfx}{snake(f.name)}" for f in run]
        target = f"({names[0]},)" if len(names) == 1 else ", ".join(names)
        L(ind, f"{target} = _U{self.fmt(codes)}(d, p)")
        L(ind, f"p += {sum(FIXED_SIZES[f.type] for f in run)}")
        for f, n in zip(run, names, strict=True):
            if f.type == "uuid":
                L(ind, f"{n} = _uuid({n})")

    def read_len(self, L: Lines, ind: int, cmp: bool, width: str) -> None:
        if cmp:
            L(ind, "ln = d[p]")
            L(ind, "if ln < 128:")
            L(ind + 1, "p += 1")
            L(ind, "else:")
            L(ind + 1, "ln, p = _ruv(d, p)")
            L(ind, "ln -= 1")
        else:
            L(ind, f"(ln,) = _U{self.fmt(width)}(d, p)")
            L(ind, f"p += {2 if width == 'h' else 4}")

    def read_value(self, L: Lines, ind: int, var: str, f: FieldSpec, v: int, pfx: str, in_tag: bool) -> None:
        a = pfx + snake(f.name)
        nul = self.nullable(f, v)
        cmp = self.compact(f, v)
        t = f.type
        if t in FIXED_CODES:  # tagged fixed value
            if t == "uuid":
                L(ind, f"(raw,) = _U{self.fmt('16s')}(d, p)")
                L(ind, f"{var} = _uuid(raw)")
            else:
                L(ind, f"({var},) = _U{self.fmt(FIXED_CODES[t])}(d, p)")
            L(ind, f"p += {FIXED_SIZES[t]}")
            return
        if nul and not in_tag:
            L(ind, f"{var}: {pytype(f)}")
        if f.is_struct:
            assert f.struct is not None
            call = f"{var}, p = {self.fn(f.struct, v, 'r')}(d, p)"
            if nul:
                if in_tag:
                    L(ind, "mk, p = _ruv(d, p)")
                    L(ind, "if mk == 0:")
                else:
                    L(ind, "mk = d[p]")
                    L(ind, "p += 1")
                    L(ind, "if mk >= 128:")
                L(ind + 1, f"{var} = None")
                L(ind, "else:")
                L(ind + 1, call)
            else:
                L(ind, call)
            return
        self.read_len(L, ind, cmp, "h" if t == "string" else "i")
        L(ind, "if ln < 0:")
        if nul:
            L(ind + 1, f"{var} = None")
        else:
            L(ind + 1, f'raise MessageDecodeError("non-nullable field {f.name} was serialized as null")')
        L(ind, "else:")
        ind += 1
        if not f.is_array:
            self.read_blob_checked(L, ind, var, f.name, t, check_null=False)
            return
        L(ind, "if ln > len(d) - p:")
        L(ind + 1, f'raise MessageDecodeError("array {f.name} claims more elements than bytes remain")')
        e = f.elem
        if e in FIXED_CODES and e != "uuid":
            L(ind, f"{var} = list({self.arr(e, 'U')}[ln](d, p))")
            L(ind, f"p += {FIXED_SIZES[e]} * ln")
            return
        L(ind, f"l_{a}: list[{elem_pytype(e)}] = []")
        L(ind, "for _ in range(ln):")
        if f.struct is not None:
            if in_tag:
                L(ind + 1, f"el_{a}, p = {self.fn(f.struct, v, 'r')}(d, p)")
                L(ind + 1, f"l_{a}.append(el_{a})")
            else:
                self.read_struct(L, ind + 1, f.struct, v, f"{a}_", f"l_{a}.append")
        elif e == "uuid":
            L(ind + 1, f"(u,) = _U{self.fmt('16s')}(d, p)")
            L(ind + 1, "p += 16")
            L(ind + 1, f"l_{a}.append(_uuid(u))")
        else:
            self.read_len(L, ind + 1, cmp, "h" if e == "string" else "i")
            self.read_blob_checked(L, ind + 1, f"el_{a}", f.name, e, check_null=True)
            L(ind + 1, f"l_{a}.append(el_{a})")
        L(ind, f"{var} = l_{a}")

    def read_blob_checked(self, L: Lines, ind: int, var: str, name: str, t: str, check_null: bool) -> None:
        """After read_len: ``ln`` holds the length; read that many bytes into ``var``."""
        if check_null:
            L(ind, "if ln < 0:")
            L(ind + 1, f'raise MessageDecodeError("null element in array {name}")')
        if t == "string":
            L(ind, "if ln > 32767:")
            L(ind + 1, f'raise MessageDecodeError("string field {name} had invalid length")')
        L(ind, "e = p + ln")
        L(ind, "if e > len(d):")
        L(ind + 1, f'raise MessageDecodeError("field {name} is longer than the remaining bytes")')
        L(ind, f"{var} = d[p:e].decode()" if t == "string" else f"{var} = d[p:e]")
        L(ind, "p = e")

    def read_tags(self, L: Lines, ind: int, s: StructSpec, v: int, pfx: str) -> None:
        known = sorted((f for f in s.fields if self.tagged(f, v)), key=lambda f: f.tag or 0)
        invalid = sorted(f.tag for f in s.fields if f.tag is not None and not self.tagged(f, v))
        unk = f"unk_{pfx}"
        for f in known:
            L(ind, f"f_{pfx}{snake(f.name)}: {pytype(f)} = {self.defaults.expr(f)}")
        L(ind, f"{unk}: list[tuple[int, bytes]] = []")
        L(ind, "nt = d[p]")
        L(ind, "p += 1")
        L(ind, "if nt:")
        i = ind + 1
        L(i, "if nt >= 128:")
        L(i + 1, "nt, p = _ruv(d, p - 1)")
        L(i, "for _ in range(nt):")
        i += 1
        L(i, "tg, p = _ruv(d, p)")
        L(i, "sz, p = _ruv(d, p)")
        L(i, "te = p + sz")
        L(i, "if te > len(d):")
        L(i + 1, 'raise MessageDecodeError("tagged field is longer than the remaining bytes")')
        kw = "if"
        for f in known:
            L(i, f"{kw} tg == {f.tag}:")
            self.read_value(L, i + 1, f"f_{pfx}{snake(f.name)}", f, v, pfx, in_tag=True)
            L(i + 1, "if p != te:")
            L(i + 2, f'raise MessageDecodeError("tagged field {f.name} does not fill its declared size")')
            kw = "elif"
        if invalid:
            L(i, f"{kw} tg in {tuple(invalid)!r}:")
            L(i + 1, 'raise MessageDecodeError(f"Tag {tg} is not valid for this version")')
            kw = "elif"
        if kw != "if":
            L(i, "else:")
            i += 1
        L(i, f"{unk}.append((tg, d[p:te]))")
        L(i, "p = te")
