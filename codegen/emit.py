"""Emission: specs → formatted Python modules (Jinja2 templates, then ``ruff format``).

Contracts:
1. Output is deterministic: specs are processed in file-name order and every table is ordered.
2. Every emitted file starts with a header naming its source spec(s) and "DO NOT EDIT".
3. ``generate`` returns the complete expected contents of the output package (file name → text); writing
   and staleness checks (``sync``/``check``) compare against it, so ``--check`` never writes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from codegen.lower import Lowerer
from codegen.model import MessageSpec, SpecError, StructSpec
from codegen.names import module_name, pytype, snake
from codegen.parse import parse_file
from codegen.validate import validate

TEMPLATES = Path(__file__).parent / "templates"


class CodegenError(Exception):
    """Generation failed for a reason other than a malformed spec (e.g. ruff missing or failing)."""


def _env() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def ruff_binary() -> str:
    cand = Path(sys.executable).parent / "ruff"
    if cand.exists():
        return str(cand)
    found = shutil.which("ruff")
    if found is None:
        raise CodegenError("ruff not found next to the Python interpreter nor on PATH")
    return found


def ruff_format(source: str, filename: str) -> str:
    proc = subprocess.run(
        [
            ruff_binary(),
            "format",
            "--isolated",
            "--line-length",
            "110",
            "--target-version",
            "py311",
            "--stdin-filename",
            filename,
            "-",
        ],
        input=source.encode(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise CodegenError(f"ruff format failed on {filename}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode()


@dataclass
class Loaded:
    spec: MessageSpec
    source: str  # e.g. "messages/VoteRequest.json"
    module: str


def load_specs(specs_dir: Path) -> list[Loaded]:
    out: list[Loaded] = []
    modules: dict[str, str] = {}
    api_keys: dict[tuple[str, int], str] = {}
    for path in sorted(specs_dir.glob("*.json")):
        spec = parse_file(path)
        validate(spec)
        mod = module_name(spec)
        if mod in modules or mod in ("messages", "__init__"):
            raise SpecError(
                f"{path}: name: module name {mod!r} collides with {modules.get(mod, 'a reserved name')}"
            )
        modules[mod] = str(path)
        if spec.api_key is not None and spec.type in ("request", "response", "metadata"):
            key = (spec.type, spec.api_key)
            if key in api_keys:
                raise SpecError(
                    f"{path}: apiKey: {spec.type} api key {spec.api_key} is already used by {api_keys[key]}"
                )
            api_keys[key] = str(path)
        out.append(Loaded(spec, f"{specs_dir.name}/{path.name}", mod))
    return out


def _struct_ctx(lw: Lowerer, s: StructSpec, top: bool) -> dict[str, Any]:
    d = lw.defaults
    fields = []
    for f in s.fields:
        fields.append(
            {
                "name": f.name,
                "attr": snake(f.name),
                "pytype": pytype(f),
                "default": d.dataclass_default(f),
                "info_default": d.info_default(f),
                "type": f.type,
                "versions": f.versions.as_tuple() if f.versions else None,
                "nullable_versions": f.nullable.as_tuple() if f.nullable else None,
                "tagged_versions": f.tagged.as_tuple() if f.tagged else None,
                "tag": f.tag,
                "ignorable": f.ignorable,
                "struct": f.struct.name if f.struct is not None else None,
                "map_key": f.map_key,
                "flexible_override": f.has_flexible_override,
                "flexible_versions": f.flexible.as_tuple() if f.flexible else None,
            }
        )
    doc = f"Top-level {lw.spec.name} message." if top else f"Struct {s.name} of {lw.spec.name}."
    return {"name": s.name, "top": top, "fields": fields, "doc": doc}


def render_module(env: Environment, item: Loaded) -> str:
    spec = item.spec
    lw = Lowerer(spec)
    lw.lower()
    top = spec.struct
    structs = [_struct_ctx(lw, s, s is top) for s in spec.all_structs()]
    out = lw.structs[top.name]
    # emit only the Struct aliases and array tables that surviving (unpruned) functions use
    body = "\n".join(line for fn in lw.funcs for line in fn.lines)
    formats = []
    for codes, kinds in sorted(lw.formats.items()):
        name = codes.replace("?", "o")
        used = [k for k in sorted(kinds) if f"_{k}_{name}(" in body]
        if used:
            formats.append((codes, name, used))
    arrays = sorted(c for c in lw.arrays if f"_{c.replace('?', 'o')}[" in body)
    text = env.get_template("module.py.j2").render(
        source=item.source,
        spec=spec,
        lowest_flexible=spec.flexible.lo if spec.flexible is not None else None,
        formats=formats,
        uuid_consts=sorted(lw.defaults.uuid_consts.items()),
        arrays=arrays,
        structs=structs,
        funcs=lw.funcs,
        top_writers=sorted(out.writers.items()),
        top_readers=sorted(out.readers.items()),
    )
    return ruff_format(text, f"{item.module}.py")


def _header_ranges(spec: MessageSpec | None) -> tuple[tuple[int, int, int], ...]:
    if spec is None or not spec.header_versions:
        return ()
    return tuple((r.lo, r.hi, hv) for r, hv in spec.header_versions)


def render_registry(env: Environment, items: list[Loaded], package: str, specs_name: str) -> str:
    reqs = {i.spec.api_key: i.spec for i in items if i.spec.type == "request"}
    resps = {i.spec.api_key: i.spec for i in items if i.spec.type == "response"}
    apis = []
    for key in sorted(k for k in reqs if k is not None and k in resps):
        req, resp = reqs[key], resps[key]
        assert req.valid is not None
        name = req.name[: -len("Request")] if req.name.endswith("Request") else req.name
        apis.append(
            {
                "api_key": key,
                "name": name,
                "const": snake(name).upper(),
                "request": req.name,
                "response": resp.name,
                "lo": req.valid.lo,
                "hi": req.valid.hi,
                "flex": req.flexible.lo if req.flexible is not None else None,
                "listeners": repr(sorted(req.listeners)) if req.listeners else "()",
                "unstable": req.latest_version_unstable,
                "req_hv": repr(_header_ranges(req)),
                "resp_hv": repr(_header_ranges(resp)),
            }
        )
    records = sorted(
        (i.spec.api_key, i.spec.name, i.spec.valid.lo, i.spec.valid.hi)
        for i in items
        if i.spec.type == "metadata" and i.spec.api_key is not None and i.spec.valid is not None
    )
    text = env.get_template("messages.py.j2").render(
        sources=f"{specs_name}/*.json",
        package=package,
        modules=[{"module": i.module, "name": i.spec.name} for i in items],
        apis=apis,
        records=records,
    )
    return ruff_format(text, "messages.py")


def generate(specs_dir: Path, package: str) -> dict[str, str]:
    """Expected contents of the output package: file name → source text."""
    env = _env()
    items = load_specs(specs_dir)
    files = {f"{i.module}.py": render_module(env, i) for i in items}
    files["messages.py"] = render_registry(env, items, package, specs_dir.name)
    init = env.get_template("init.py.j2").render(sources=f"{specs_dir.name}/*.json", package=package)
    files["__init__.py"] = ruff_format(init, "__init__.py")
    return files


def diff(out_dir: Path, files: dict[str, str]) -> list[str]:
    """Problems that ``--check`` reports: stale, missing and extra files (empty when up to date)."""
    problems: list[str] = []
    for name, text in sorted(files.items()):
        p = out_dir / name
        if not p.exists():
            problems.append(f"missing: {p}")
        elif p.read_text(encoding="utf-8") != text:
            problems.append(f"stale: {p}")
    if out_dir.exists():
        for p in sorted(out_dir.glob("*.py")):
            if p.name not in files:
                problems.append(f"extra: {p}")
    return problems


def sync(out_dir: Path, files: dict[str, str]) -> list[str]:
    """Write changed files, delete extra ``*.py`` files; return what was written or removed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    changed: list[str] = []
    for name, text in sorted(files.items()):
        p = out_dir / name
        if not p.exists() or p.read_text(encoding="utf-8") != text:
            p.write_text(text, encoding="utf-8")
            changed.append(f"wrote: {p}")
    for p in sorted(out_dir.glob("*.py")):
        if p.name not in files:
            p.unlink()
            changed.append(f"removed: {p}")
    return changed
