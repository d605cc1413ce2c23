"""Python-side naming, typing and default values for spec fields (docs/CONTRACTS.md "Generated code").

Contracts:
1. snake_case treats "KRaft" as one word: KRaftVersionFeature → kraft_version_feature.
2. Python types: bool, int for all integers, float for float64, UUID, str, bytes (bytes and records),
   list[...] for arrays, the struct class for structs; ``X | None`` if nullable in any version.
3. Defaults follow Kafka's FieldSpec.fieldDefault: spec default if given, else false/0/""/ZERO_UUID/b""/[]/a
   default struct instance; "null" → None; records without a default → None when nullable in all versions.
"""

from __future__ import annotations

import keyword

from codegen.model import INT_RANGES, FieldSpec, MessageSpec
from codegen.validate import parse_int_default, parse_uuid_default, snake_attr


def snake(name: str) -> str:
    s = snake_attr(name)
    return s + "_" if keyword.iskeyword(s) else s


def elem_pytype(t: str) -> str:
    if t == "bool":
        return "bool"
    if t in INT_RANGES:
        return "int"
    return {"float64": "float", "uuid": "UUID", "string": "str", "bytes": "bytes", "records": "bytes"}.get(
        t, t
    )


def any_nullable(f: FieldSpec) -> bool:
    return f.nullable is not None and (f.versions is None or f.versions.intersect(f.nullable) is not None)


def pytype(f: FieldSpec) -> str:
    base = f"list[{elem_pytype(f.elem)}]" if f.is_array else elem_pytype(f.type)
    return f"{base} | None" if any_nullable(f) or default_is_none(f) else base


def default_is_none(f: FieldSpec) -> bool:
    if f.default == "null":
        return True
    if f.type == "records" and f.default is None:
        return f.nullable is not None and f.versions is not None and f.nullable.contains_range(f.versions)
    return False


class Defaults:
    """Renders default-value expressions; uuid defaults become module-level constants."""

    def __init__(self) -> None:
        self.uuid_consts: dict[str, str] = {}  # const name -> expression

    def uuid_const(self, text: str) -> str:
        u = parse_uuid_default(text)
        name = f"_UUID_{u.hex}"
        self.uuid_consts[name] = f'UUID("{u}")'
        return name

    def expr(self, f: FieldSpec) -> str:
        """A fresh default value (new list / struct instance each evaluation)."""
        if default_is_none(f):
            return "None"
        d = f.default
        if f.is_array:
            return "[]"
        if f.is_struct:
            return f"{f.type}()"
        t = f.type
        if t == "bool":
            return "True" if (d or "").lower() == "true" else "False"
        if t in INT_RANGES:
            return str(parse_int_default(d, t)) if d else "0"
        if t == "float64":
            return repr(float(d)) if d else "0.0"
        if t == "uuid":
            return self.uuid_const(d) if d else "ZERO_UUID"
        if t == "string":
            return repr(d or "")
        return 'b""'

    def dataclass_default(self, f: FieldSpec) -> str:
        e = self.expr(f)
        if e == "[]":
            return "field(default_factory=list)"
        if f.is_struct and e != "None":
            return f"field(default_factory={f.type})"
        return e

    def info_default(self, f: FieldSpec) -> str:
        return "None" if f.is_array or f.is_struct else self.expr(f)

    def nondefault(self, f: FieldSpec, x: str) -> str:
        """A condition true when ``x`` differs from the field's default (Kafka writes only such tagged values)."""
        e = self.expr(f)
        if e == "None":
            return f"{x} is not None"
        if f.is_array or f.type in ("bytes", "records"):
            return f"{x} is None or len({x}) != 0"
        if e in ("True", "False"):
            return f"not {x}" if e == "True" else x
        if f.is_struct:
            assert f.struct is not None
            # field-by-field against the defaults: no default instance built, no dataclass __eq__ call
            parts = [self.nondefault(g, f"{x}.{snake(g.name)}") for g in f.struct.fields]
            parts.append(f"{x}.unknown_tagged_fields")
            cond = " or ".join(f"({c})" for c in parts)
            return f"{x} is None or {cond}" if any_nullable(f) else cond
        return f"{x} != {e}"


def module_name(spec: MessageSpec) -> str:
    return snake(spec.name)
