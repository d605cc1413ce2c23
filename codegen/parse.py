"""Spec files → :mod:`codegen.model` objects.

Contracts (mirroring Kafka's MessageGenerator JSON_SERDE):
1. ``//`` line comments and ``/* */`` block comments are allowed anywhere outside strings.
2. JSON numbers and booleans are accepted wherever Kafka's specs use strings (``default``, ``tag``,
   ``ignorable``, ``mapKey``, ``latestVersionUnstable``, ``apiKey``, version ranges) and coerced to strings.
3. Struct references are resolved here: an inline ``fields`` list defines a struct named by the field's
   (element) type; a type without ``fields`` must name a ``commonStructs`` entry. A struct name is defined once
   per file; a common struct cannot be redefined inline.
4. Every error is a :class:`SpecError` whose message starts with the file path and names the field or key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codegen.model import PRIMITIVES, FieldSpec, MessageSpec, SpecError, StructSpec, Versions, parse_versions


def strip_comments(text: str) -> str:
    """Remove // and /* */ comments outside JSON strings (newlines kept so error positions stay useful)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
        elif c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated /* comment")
            out.append("\n" * text.count("\n", i, j))
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def as_str(value: Any) -> str | None:
    """Kafka-style coercion of a scalar JSON value to its string spelling."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError(f"expected a scalar, got {type(value).__name__}")


def as_bool(value: Any) -> bool:
    s = as_str(value)
    if s is None:
        return False
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    raise ValueError(f"expected a boolean, got {value!r}")


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.defined: dict[str, StructSpec] = {}
        self.common: dict[str, StructSpec] = {}
        self.pending: list[tuple[str, FieldSpec]] = []

    def err(self, where: str, msg: str) -> SpecError:
        return SpecError(f"{self.path}: {where}: {msg}")

    def versions(self, where: str, key: str, raw: Any) -> Versions | None:
        try:
            text = as_str(raw)
            if text is None or text == "":
                raise ValueError("empty version range")
            return parse_versions(text)
        except (TypeError, ValueError) as e:
            raise self.err(where, f"{key}: {e}") from None

    def message(self, doc: Any) -> MessageSpec:
        if not isinstance(doc, dict):
            raise self.err("top level", "expected a JSON object")
        for key in ("name", "type", "validVersions", "fields"):
            if key not in doc:
                raise self.err(key, "required key is missing")
        name = as_str(doc["name"]) or ""
        if "flexibleVersions" not in doc:
            raise self.err("flexibleVersions", 'required key is missing (use "none" or "N+")')
        valid = self.versions("validVersions", "validVersions", doc["validVersions"])
        flexible = self.versions("flexibleVersions", "flexibleVersions", doc["flexibleVersions"])
        if flexible is not None and not flexible.open_ended:
            raise self.err("flexibleVersions", f'must be open-ended ("N+") or "none", got {flexible}')
        api_key: int | None = None
        if doc.get("apiKey") is not None:
            try:
                api_key = int(as_str(doc["apiKey"]) or "")
            except ValueError:
                raise self.err("apiKey", f"not an integer: {doc['apiKey']!r}") from None
        for c in doc.get("commonStructs", []) or []:
            cname = as_str(c.get("name")) or ""
            if cname in self.common:
                raise self.err(f"commonStructs.{cname}", "common struct defined more than once")
            cv = self.versions(f"commonStructs.{cname}", "versions", c.get("versions"))
            if cv is None:
                raise self.err(f"commonStructs.{cname}", 'versions must not be "none"')
            self.common[cname] = StructSpec(cname, cv, [], common=True)
        for c in doc.get("commonStructs", []) or []:
            cs = self.common[as_str(c.get("name")) or ""]
            cs.fields = self.fields(cs.name, c.get("fields", []))
        top = StructSpec(name, valid or Versions(0, 0), self.fields(name, doc["fields"]))
        self.resolve()
        header_versions = None
        if "headerVersions" in doc:
            header_versions = []
            for rng, hv in dict(doc["headerVersions"]).items():
                r = self.versions("headerVersions", "headerVersions", rng)
                if r is None:
                    raise self.err("headerVersions", 'range must not be "none"')
                header_versions.append((r, int(as_str(hv) or "")))
        try:
            return MessageSpec(
                path=self.path,
                name=name,
                type=as_str(doc["type"]) or "",
                api_key=api_key,
                valid=valid,
                flexible=flexible,
                struct=top,
                common_structs=list(self.common.values()),
                listeners=[as_str(x) or "" for x in doc.get("listeners", []) or []],
                latest_version_unstable=as_bool(doc.get("latestVersionUnstable", False)),
                header_versions=header_versions,
            )
        except ValueError as e:
            raise self.err("top level", str(e)) from None

    def fields(self, owner: str, raw: Any) -> list[FieldSpec]:
        if not isinstance(raw, list):
            raise self.err(f"{owner}.fields", "expected a list")
        return [self.field(owner, f) for f in raw]

    def field(self, owner: str, raw: Any) -> FieldSpec:
        if not isinstance(raw, dict):
            raise self.err(f"{owner}.fields", "expected an object per field")
        name = as_str(raw.get("name")) or "<unnamed>"
        where = f"field {owner}.{name}"
        ftype = as_str(raw.get("type"))
        if not ftype:
            raise self.err(where, "type is required")
        tagged = (
            self.versions(where, "taggedVersions", raw["taggedVersions"]) if "taggedVersions" in raw else None
        )
        if "versions" in raw:
            versions = self.versions(where, "versions", raw["versions"])
        elif tagged is not None:
            versions = tagged
        else:
            raise self.err(where, "versions is required")
        tag: int | None = None
        if raw.get("tag") is not None:
            try:
                tag = int(as_str(raw["tag"]) or "")
            except (TypeError, ValueError):
                raise self.err(where, f"tag is not an integer: {raw['tag']!r}") from None
        try:
            ignorable = as_bool(raw.get("ignorable", False))
            map_key = as_bool(raw.get("mapKey", False))
            default = as_str(raw.get("default"))
        except (TypeError, ValueError) as e:
            raise self.err(where, str(e)) from None
        f = FieldSpec(
            name=name,
            type=ftype,
            versions=versions,
            nullable=self.versions(where, "nullableVersions", raw["nullableVersions"])
            if "nullableVersions" in raw
            else None,
            tagged=tagged,
            tag=tag,
            ignorable=ignorable,
            default=default,
            map_key=map_key,
            flexible=self.versions(where, "flexibleVersions", raw["flexibleVersions"])
            if "flexibleVersions" in raw
            else None,
            has_flexible_override="flexibleVersions" in raw,
            about=as_str(raw.get("about")) or "",
        )
        if "fields" in raw:
            elem = f.elem
            if elem in PRIMITIVES or elem.startswith("[]"):
                raise self.err(where, f"type {ftype} cannot have nested fields")
            f.fields = self.fields(elem, raw["fields"])
            if elem in self.common:
                raise self.err(where, f"struct {elem} redefines a common struct")
            if elem in self.defined:
                raise self.err(where, f"struct {elem} is defined more than once")
            self.defined[elem] = StructSpec(elem, versions or Versions(0, 0), f.fields)
            f.struct = self.defined[elem]
        elif f.elem not in PRIMITIVES and not f.elem.startswith("[]"):
            self.pending.append((where, f))
        return f

    def resolve(self) -> None:
        for where, f in self.pending:
            s = self.common.get(f.elem)
            if s is None:
                raise self.err(where, f"unknown struct type {f.elem} (no inline fields and no common struct)")
            f.struct = s


def parse_text(text: str, path: str) -> MessageSpec:
    try:
        doc = json.loads(strip_comments(text))
    except ValueError as e:
        raise SpecError(f"{path}: invalid JSON: {e}") from None
    return _Parser(path).message(doc)


def parse_file(path: Path) -> MessageSpec:
    return parse_text(path.read_text(encoding="utf-8"), str(path))
