"""Readers: per-version flat decode bodies (semantics in codegen/lower.py, rules 1-7)."""

from __future__ import annotations

from codegen.lower_base import Lines, LowerBase
from codegen.model import FIXED_CODES, FIXED_SIZES, FieldSpec, StructSpec
from codegen.names import elem_pytype, snake

_EXTRA_SIZE = {"": 0, "B": 1, "h": 2, "i": 4}
# Arrays of flat structs with at least this many elements are read with one iter_unpack
# (see Reader.read_flat_elements); shorter ones element by element.
FLAT_MIN = 8


class Reader(LowerBase):
    def reader(self, s: StructSpec, v: int) -> list[str]:
        L = Lines()
        self.read_struct(L, 0, s, v, "", None)
        return L.lines

    def read_struct(self, L: Lines, ind: int, s: StructSpec, v: int, pfx: str, sink: str | None) -> None:
        """Read struct ``s`` straight into a new instance; then ``return obj, p`` (sink None) or
        ``<sink>(obj)`` when inlined. The instance is made with ``object.__new__`` (no dataclass
        __init__), so every slot is assigned below: read, tagged default, or absent-field default."""
        flex = self.spec.is_flexible(v)
        ob = f"ob_{pfx}"
        L(ind, f"{ob} = _new({s.name})")
        run: list[FieldSpec] = []
        for f in s.fields:
            if not self.present(f, v) or self.tagged(f, v):
                continue
            if f.type in FIXED_CODES:
                run.append(f)
                continue
            # the length prefix of a string/bytes/array right after a fixed-width run is unpacked with it
            # (compact: its first byte, "B", finished by _ruv when it has the continuation bit)
            lead = bool(run) and not f.is_struct
            width = ("B" if self.compact(f, v) else "h" if f.type == "string" else "i") if lead else ""
            self.flush_read_run(L, ind, run, ob, pfx, extra=width)
            run = []
            self.read_value(L, ind, f"{ob}.{snake(f.name)}", f, v, pfx, in_tag=False, len_read=lead)
        # a trailing fixed-width run also unpacks the tag-count byte ("B"): one unpack instead of two reads
        fold = flex and bool(run)
        self.flush_read_run(L, ind, run, ob, pfx, extra="B" if fold else "", extra_name="nt")
        for f in s.fields:
            if not self.present(f, v):
                L(ind, f"{ob}.{snake(f.name)} = {self.defaults.expr(f)}")
        if flex:
            self.read_tags(L, ind, s, v, ob, pfx, count_read=fold)
            L(ind, f"{ob}.unknown_tagged_fields = unk_{pfx}")
        else:
            L(ind, f"{ob}.unknown_tagged_fields = []")
        L(ind, f"return {ob}, p" if sink is None else f"{sink}({ob})")

    def flush_read_run(
        self,
        L: Lines,
        ind: int,
        run: list[FieldSpec],
        ob: str,
        pfx: str,
        extra: str = "",
        extra_name: str = "ln",
    ) -> None:
        """Unpack a run of fixed-width fields directly into ``ob`` (uuids via a local, then converted), plus
        an ``extra`` trailing value (struct code: a length prefix or the tag-count byte) into ``extra_name``."""
        if not run:
            return
        codes = "".join(FIXED_CODES[f.type] for f in run) + extra
        names = [f"u_{pfx}{snake(f.name)}" if f.type == "uuid" else f"{ob}.{snake(f.name)}" for f in run] + (
            [extra_name] if extra else []
        )
        target = f"({names[0]},)" if len(names) == 1 else ", ".join(names)
        L(ind, f"{target} = {self.upk(codes)}(d, p)")
        L(ind, f"p += {sum(FIXED_SIZES[f.type] for f in run) + _EXTRA_SIZE[extra]}")
        for f, n in zip(run, names[: len(run)], strict=True):
            if f.type == "uuid":
                L(ind, f"{ob}.{snake(f.name)} = _UC.get({n}) or _uuid({n})")

    def read_len(self, L: Lines, ind: int, cmp: bool, width: str, len_read: bool = False) -> None:
        """Read a length into ``ln`` (-1 = null); with ``len_read`` it was unpacked with the preceding run
        (compact: only its first byte, p already past it)."""
        if len_read:
            if cmp:
                L(ind, "if ln >= 128:")
                L(ind + 1, "ln, p = _ruv(d, p - 1)")
                L(ind, "ln -= 1")
        elif cmp:
            L(ind, "ln = d[p]")
            L(ind, "if ln < 128:")
            L(ind + 1, "p += 1")
            L(ind, "else:")
            L(ind + 1, "ln, p = _ruv(d, p)")
            L(ind, "ln -= 1")
        else:
            L(ind, f"(ln,) = {self.upk(width)}(d, p)")
            L(ind, f"p += {2 if width == 'h' else 4}")

    def read_value(
        self,
        L: Lines,
        ind: int,
        var: str,
        f: FieldSpec,
        v: int,
        pfx: str,
        in_tag: bool,
        len_read: bool = False,
    ) -> None:
        a = pfx + snake(f.name)
        nul = self.nullable(f, v)
        cmp = self.compact(f, v)
        t = f.type
        if t in FIXED_CODES:  # tagged fixed value
            if t == "uuid":
                L(ind, f"(raw,) = {self.upk('16s')}(d, p)")
                L(ind, f"{var} = _UC.get(raw) or _uuid(raw)")
            else:
                L(ind, f"({var},) = {self.upk(FIXED_CODES[t])}(d, p)")
            L(ind, f"p += {FIXED_SIZES[t]}")
            return
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
        self.read_len(L, ind, cmp, "h" if t == "string" else "i", len_read)
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
        if (
            f.struct is not None
            and not in_tag
            and self.inline_ok(f.struct, v, "r")
            and self.flat(f.struct, v)
        ):
            self.read_flat_elements(L, ind, f.struct, v, a, f.name)
            L(ind, f"{var} = l_{a}")
            return
        L(ind, "for _ in range(ln):")
        if f.struct is not None:
            if in_tag or not self.inline_ok(f.struct, v, "r"):
                L(ind + 1, f"el_{a}, p = {self.fn(f.struct, v, 'r')}(d, p)")
                L(ind + 1, f"l_{a}.append(el_{a})")
            else:
                self.read_struct(L, ind + 1, f.struct, v, f"{a}__", f"l_{a}.append")
        elif e == "uuid":
            L(ind + 1, f"(u,) = {self.upk('16s')}(d, p)")
            L(ind + 1, "p += 16")
            L(ind + 1, f"l_{a}.append(_UC.get(u) or _uuid(u))")
        else:
            self.read_len(L, ind + 1, cmp, "h" if e == "string" else "i")
            self.read_blob_checked(L, ind + 1, f"el_{a}", f.name, e, check_null=True)
            L(ind + 1, f"l_{a}.append(el_{a})")
        L(ind, f"{var} = l_{a}")

    def flat(self, s: StructSpec, v: int) -> bool:
        """Every field of ``s`` present in ``v`` is a regular fixed-width field (no known tags)."""
        return all(
            f.type in FIXED_CODES and not self.tagged(f, v) for f in s.fields if self.present(f, v)
        ) and any(self.present(f, v) for f in s.fields)

    def read_flat_elements(self, L: Lines, ind: int, s: StructSpec, v: int, a: str, name: str) -> None:
        """Array of ``flat`` structs: elements with an empty tag section all have the same size, so for
        longer arrays one ``iter_unpack`` over the (bounds-checked) span reads them; the general
        per-element body reads the rest (from the first element that carries tags on, or short arrays)."""
        flex = self.spec.is_flexible(v)
        fields = [f for f in s.fields if self.present(f, v)]
        codes = "".join(FIXED_CODES[f.type] for f in fields) + ("B" if flex else "")
        size = sum(FIXED_SIZES[f.type] for f in fields) + (1 if flex else 0)
        names = [f"v_{a}__{snake(f.name)}" for f in fields] + (["nt"] if flex else [])
        ob = f"ob_{a}__"
        L(ind, f"if ln >= {FLAT_MIN}:")
        i = ind + 1
        L(i, f"if {size} * ln > len(d) - p:")
        L(i + 1, f'raise MessageDecodeError("array {name} claims more elements than bytes remain")')
        L(i, f"for {', '.join(names)} in {self.iupk(codes)}(memoryview(d)[p : p + {size} * ln]):")
        if flex:
            L(i + 1, "if nt:")
            L(i + 2, "break")
        L(i + 1, f"{ob} = _new({s.name})")
        for f, n in zip(fields, names, strict=False):
            L(i + 1, f"{ob}.{snake(f.name)} = " + (f"_UC.get({n}) or _uuid({n})" if f.type == "uuid" else n))
        for f in s.fields:
            if not self.present(f, v):
                L(i + 1, f"{ob}.{snake(f.name)} = {self.defaults.expr(f)}")
        L(i + 1, f"{ob}.unknown_tagged_fields = []")
        L(i + 1, f"l_{a}.append({ob})")
        L(i, f"p += {size} * len(l_{a})")
        L(ind, f"for _ in range(ln - len(l_{a})):")
        self.read_struct(L, ind + 1, s, v, f"{a}__", f"l_{a}.append")

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

    def read_tags(
        self, L: Lines, ind: int, s: StructSpec, v: int, ob: str, pfx: str, count_read: bool
    ) -> None:
        """Tag section; with ``count_read`` the first byte of the count is already in ``nt`` (p past it)."""
        known = sorted((f for f in s.fields if self.tagged(f, v)), key=lambda f: f.tag or 0)
        invalid = sorted(f.tag for f in s.fields if f.tag is not None and not self.tagged(f, v))
        unk = f"unk_{pfx}"
        for f in known:
            var = f"{ob}.{snake(f.name)}"
            expr = self.defaults.expr(f)
            sub = f.struct
            if (
                f.is_struct
                and expr != "None"
                and sub is not None
                and all(not g.is_struct for g in sub.fields)
            ):
                # a fresh default instance, built without the dataclass __init__ (every slot assigned)
                tmp = f"t_{pfx}{snake(f.name)}"
                L(ind, f"{tmp} = _new({f.type})")
                for g in sub.fields:
                    L(ind, f"{tmp}.{snake(g.name)} = {self.defaults.expr(g)}")
                L(ind, f"{tmp}.unknown_tagged_fields = []")
                L(ind, f"{var} = {tmp}")
            else:
                L(ind, f"{var} = {expr}")
        L(ind, f"{unk}: list[tuple[int, bytes]] = []")
        if not count_read:
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
            self.read_value(L, i + 1, f"{ob}.{snake(f.name)}", f, v, pfx, in_tag=True)
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
