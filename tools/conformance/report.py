"""Text, JSON and JUnit renderings of a run.

Contracts:
1. Text: one line per check (status, id, statement, detail); FAIL lines are followed by their evidence, one
   JSON line per exchange; a summary line counts PASS/FAIL/SKIP.
2. JSON: one document {"target", "cluster_id", "results": [...], "summary"} with every result's evidence.
3. JUnit: one testsuite; FAIL is a <failure> whose text is the evidence, SKIP is <skipped message=...>.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from tools.conformance.model import Result


def summary(results: list[Result]) -> dict[str, int]:
    counts = Counter(r.status for r in results)
    return {s: counts.get(s, 0) for s in ("PASS", "FAIL", "SKIP")}


def text_report(results: list[Result], *, verbose: bool = False) -> str:
    lines: list[str] = []
    for r in results:
        tail = f" -- {r.detail}" if r.detail else ""
        design = f" [by design: {r.check.by_design}]" if r.check.by_design else ""
        lines.append(f"{r.status:4} {r.check.id}: {r.check.statement}{design}{tail}")
        if r.status == "FAIL" or verbose:
            lines.append(f"     source: {r.check.source}")
            lines += [f"     {json.dumps(e, sort_keys=True)}" for e in r.evidence]
    s = summary(results)
    lines.append(f"{s['PASS']} passed, {s['FAIL']} failed, {s['SKIP']} skipped")
    return "\n".join(lines) + "\n"


def json_report(target: str, cluster_id: str, results: list[Result]) -> str:
    doc: dict[str, Any] = {
        "target": target,
        "cluster_id": cluster_id,
        "results": [r.to_json() for r in results],
        "summary": summary(results),
    }
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def junit_report(target: str, results: list[Result]) -> str:
    s = summary(results)
    suite = ET.Element(
        "testsuite",
        name=f"kraft-conformance {target}",
        tests=str(len(results)),
        failures=str(s["FAIL"]),
        skipped=str(s["SKIP"]),
        errors="0",
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for r in results:
        case = ET.SubElement(
            suite, "testcase", classname="kraft-conformance", name=r.check.id, time=f"{r.seconds:.3f}"
        )
        if r.status == "FAIL":
            fail = ET.SubElement(case, "failure", message=r.detail or "failed")
            fail.text = "\n".join(json.dumps(e, sort_keys=True) for e in r.evidence)
        elif r.status == "SKIP":
            ET.SubElement(case, "skipped", message=r.detail)
        out = ET.SubElement(case, "system-out")
        out.text = f"{r.check.statement}\nsource: {r.check.source}"
    return ET.tostring(suite, encoding="unicode") + "\n"
