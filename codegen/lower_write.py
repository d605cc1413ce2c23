"""Writers: per-version flat encode bodies (semantics in codegen/lower.py, rules 1-6).

Writers append ``bytes`` parts to a list (``out``); the top-level method joins them once, so a large
payload (records) is copied exactly once. One-byte values come from the ``_B1`` table.
"""

from __future__ import annotations

from codegen.lower_base import Lines, LowerBase
from codegen.model import FIXED_CODES, FieldSpec, StructSpec
from codegen.names import any_nullable, default_is_none, snake


class Writer(LowerBase):
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
            x = f"{obj}.{snake(f.name)}"
            if run and f.is_array and self.compact(f, v) and not self.nullable(f, v):
                # a compact array count right after a fixed-width run is packed with it ("B") when < 127
                n = f"n_{pfx}{snake(f.name)}"
                if any_nullable(f) or default_is_none(f):
                    L(ind, f"if {x} is None:")
                    L(ind + 1, f'raise MessageEncodeError("non-nullable field {f.name} is None")')
                L(ind, f"a_{pfx}{snake(f.name)} = {x}")
                L(ind, f"{n} = len(a_{pfx}{snake(f.name)})")
                L(ind, f"if {n} < 127:")
                self.flush_write_run(L, ind + 1, obj, run, count=f"{n} + 1")
                L(ind, "else:")
                self.flush_write_run(L, ind + 1, obj, run)
                L(ind + 1, f"out.append(_uvb({n} + 1))")
                run = []
                self.write_value(L, ind, "out", x, f, v, pfx, in_tag=False, counted=True)
                continue
            self.flush_write_run(L, ind, obj, run)
            run = []
            self.write_value(L, ind, "out", x, f, v, pfx, in_tag=False)
        no_known_tags = not any(self.tagged(f, v) for f in s.fields)
        if flex and run and no_known_tags:
            # fold the empty tag buffer (one zero byte, struct pad "x") into the trailing fixed-width pack
            self.flush_write_run(L, ind, obj, run, pad=True)
            L(ind, f"if {obj}.unknown_tagged_fields:")
            L(ind + 1, "out[-1] = out[-1][:-1]")
            L(ind + 1, f"_wtags(out, {obj}.unknown_tagged_fields)")
            return
        self.flush_write_run(L, ind, obj, run)
        if flex:
            self.write_tags(L, ind, s, v, obj, pfx)
        else:
            L(ind, f"if {obj}.unknown_tagged_fields:")
            L(
                ind + 1,
                'raise MessageEncodeError("Tagged fields were set, but this version does not support them")',
            )
        if len(L.lines) == start:
            L(ind, "pass")

    def flush_write_run(
        self, L: Lines, ind: int, obj: str, run: list[FieldSpec], pad: bool = False, count: str = ""
    ) -> None:
        """Pack a run of fixed-width fields; ``pad`` appends the empty tag section (a zero pad byte),
        ``count`` the one-byte compact count of the array that follows."""
        if not run:
            return
        codes = "".join(FIXED_CODES[f.type] for f in run) + ("x" if pad else "") + ("B" if count else "")
        args = ", ".join(
            [f"{obj}.{snake(f.name)}" + (".int.to_bytes(16)" if f.type == "uuid" else "") for f in run]
            + ([count] if count else [])
        )
        L(ind, f"out.append({self.pk(codes)}({args}))")

    def write_len(self, L: Lines, ind: int, buf: str, n: str, compact: bool, width: str) -> None:
        if compact:
            L(ind, f"if {n} < 127:")
            L(ind + 1, f"{buf}.append(_B1[{n} + 1])")
            L(ind, "else:")
            L(ind + 1, f"{buf}.append(_uvb({n} + 1))")
        else:
            L(ind, f"{buf}.append({self.pk(width)}({n}))")

    def write_value(
        self,
        L: Lines,
        ind: int,
        buf: str,
        x: str,
        f: FieldSpec,
        v: int,
        pfx: str,
        in_tag: bool,
        counted: bool = False,
    ) -> None:
        """Write field ``f`` (value ``x``) to ``buf``; ``counted``: a non-nullable compact array whose
        ``a_``/``n_`` locals, None check and count were already emitted (see write_struct)."""
        a = pfx + snake(f.name)
        nul = self.nullable(f, v)
        cmp = self.compact(f, v)
        t = f.type
        if t in FIXED_CODES:  # only reached for tagged values
            if t == "uuid":
                L(ind, f"{buf}.append({x}.int.to_bytes(16))")
            else:
                L(ind, f"{buf}.append({self.pk(FIXED_CODES[t])}({x}))")
            return
        if nul:
            L(ind, f"if {x} is None:")
            if f.is_struct:
                L(ind + 1, f"{buf}.append({'_B1[0]' if in_tag else '_B1[255]'})")
                L(ind, "else:")
                L(ind + 1, f"{buf}.append(_B1[1])")
            elif cmp:
                L(ind + 1, f"{buf}.append(_B1[0])")
                L(ind, "else:")
            else:
                L(ind + 1, f"{buf}.append({self.pk('h' if t == 'string' else 'i')}(-1))")
                L(ind, "else:")
            ind += 1
        elif (any_nullable(f) or default_is_none(f)) and not counted:
            L(ind, f"if {x} is None:")
            L(ind + 1, f'raise MessageEncodeError("non-nullable field {f.name} is None")')
        if f.is_struct:
            assert f.struct is not None
            L(ind, f"{self.fn(f.struct, v, 'w')}({buf}, {x})")
        elif f.is_array:
            e = f.elem
            if counted:
                if e in FIXED_CODES and e != "uuid":
                    L(ind, f"if 0 < n_{a} < 127:")
                    L(ind + 1, f"{buf}.append({self.arr(e, 'T')}[n_{a}](*a_{a}))")
                    L(ind, f"elif n_{a}:")
                    L(ind + 1, f"{buf}.append({self.arr(e, 'P')}[n_{a}](*a_{a}))")
                    return
            else:
                L(ind, f"a_{a} = {x}")
                L(ind, f"n_{a} = len(a_{a})")
            if e in FIXED_CODES and e != "uuid" and cmp and not counted:
                # small counts: one-byte count, then the elements from a per-count packer (tuple-indexed)
                L(ind, f"if n_{a} < 127:")
                L(ind + 1, f"{buf}.append(_B1[n_{a} + 1])")
                L(ind + 1, f"if n_{a}:")
                L(ind + 2, f"{buf}.append({self.arr(e, 'T')}[n_{a}](*a_{a}))")
                L(ind, "else:")
                L(ind + 1, f"{buf}.append(_uvb(n_{a} + 1))")
                L(ind + 1, f"{buf}.append({self.arr(e, 'P')}[n_{a}](*a_{a}))")
                return
            if not counted:
                self.write_len(L, ind, buf, f"n_{a}", cmp, "i")
            if f.struct is not None:
                L(ind, f"for e_{a} in a_{a}:")
                if buf == "out" and not in_tag and self.inline_ok(f.struct, v, "w"):
                    self.write_struct(L, ind + 1, f.struct, v, f"e_{a}", f"{a}__")
                else:
                    L(ind + 1, f"{self.fn(f.struct, v, 'w')}({buf}, e_{a})")
            elif e == "uuid":
                L(ind, f"for e_{a} in a_{a}:")
                L(ind + 1, f"{buf}.append(e_{a}.int.to_bytes(16))")
            elif e in FIXED_CODES:
                L(ind, f"{buf}.append({self.arr(e, 'P')}[n_{a}](*a_{a}))")
            else:
                L(ind, f"for e_{a} in a_{a}:")
                self.write_blob(L, ind + 1, buf, f"e_{a}", f"{a}_e", f.name, e, cmp)
        else:
            self.write_blob(L, ind, buf, x, a, f.name, t, cmp)

    def write_blob(self, L: Lines, ind: int, buf: str, x: str, a: str, name: str, t: str, cmp: bool) -> None:
        if t == "string":
            # prefix + UTF-8 from the bounded per-string cache (kwire.codec); too long → MessageEncodeError
            cache, fn = ("_SC", "_cstr") if cmp else ("_SL", "_lstr")
            # (a cached encoding is never empty, so ``or`` only calls the encoder on a miss)
            L(ind, f"{buf}.append({cache}.get({x}) or {fn}({x}))")
            return
        L(ind, f"s_{a} = {x}")
        L(ind, f"n_{a} = len(s_{a})")
        if cmp:
            L(ind, f"if n_{a} < 127:")
            L(ind + 1, f"{buf}.append(_B1[n_{a} + 1])")
            L(ind, "else:")
            L(ind + 1, f"{buf}.append(_uvb(n_{a} + 1))")
        else:
            L(ind, f"{buf}.append({self.pk('i')}(n_{a}))")
        L(ind, f"{buf}.append(s_{a})")

    def write_tags(self, L: Lines, ind: int, s: StructSpec, v: int, obj: str, pfx: str) -> None:
        known = sorted((f for f in s.fields if self.tagged(f, v)), key=lambda f: f.tag or 0)
        if not known:
            L(ind, f"if {obj}.unknown_tagged_fields:")
            L(ind + 1, f"_wtags(out, {obj}.unknown_tagged_fields)")
            L(ind, "else:")
            L(ind + 1, "out.append(_B1[0])")
            return
        # Known tags are collected in ascending tag order, so the section is written without a sort unless
        # unknown tags must be merged in; an all-default section is the single byte 0.
        tags = f"tags_{pfx}"
        L(ind, f"{tags}: list[tuple[int, bytes]] = []")
        for f in known:
            x = f"{obj}.{snake(f.name)}"
            L(ind, f"if {self.defaults.nondefault(f, x)}:")
            if f.type in FIXED_CODES:
                val = f"{x}.int.to_bytes(16)" if f.type == "uuid" else f"{self.pk(FIXED_CODES[f.type])}({x})"
                L(ind + 1, f"{tags}.append(({f.tag}, {val}))")
                continue
            tb = f"tb_{pfx}{f.tag}"
            L(ind + 1, f"{tb}: list[bytes] = []")
            self.write_value(L, ind + 1, tb, x, f, v, pfx, in_tag=True)
            L(ind + 1, f'{tags}.append(({f.tag}, b"".join({tb})))')
        L(ind, f"if {obj}.unknown_tagged_fields:")
        L(ind + 1, f"_wtags(out, [*{obj}.unknown_tagged_fields, *{tags}])")
        L(ind, f"elif {tags}:")
        L(ind + 1, f"_wstags(out, {tags})")
        L(ind, "else:")
        L(ind + 1, "out.append(_B1[0])")
