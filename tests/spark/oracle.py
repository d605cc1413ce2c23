"""Kafka's own view of a metadata log: ``kafka-dump-log --cluster-metadata-decoder`` output, parsed.

Each record line is ``| offset: N CreateTime: T ... headerKeys: [...] REST`` where REST is
``payload: {"type":..,"version":..,"data":..}`` for a metadata record or ``Name[:] {json}`` for a control record.
Kafka's metadata type constants are mapped to api keys by asking Kafka's own MetadataRecordType enum.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.interop.kafka import JVM_OPTS, classpath

_LINE = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) .*? headerKeys: \[[^\]]*\] (.*)$")
_CONTROL = re.compile(r"^(\w+):? (\{.*\})$")

_TYPES_JAVA = """
import org.apache.kafka.common.metadata.MetadataRecordType;
public class MetadataTypes {
    public static void main(String[] args) {
        for (MetadataRecordType t : MetadataRecordType.values()) System.out.println(t.name() + " " + t.id());
    }
}
"""


@dataclass(frozen=True)
class KafkaRecord:
    offset: int
    timestamp: int
    control: str | None  # Kafka's control type name, or None for a metadata record
    metadata_type: str | None  # e.g. FEATURE_LEVEL_RECORD
    version: int | None
    json_text: str


def parse_dump(text: str) -> list[KafkaRecord]:
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        offset, ts, rest = int(m.group(1)), int(m.group(2)), m.group(3)
        if rest.startswith("payload: "):
            payload = json.loads(rest[len("payload: ") :])
            out.append(
                KafkaRecord(
                    offset, ts, None, payload["type"], payload["version"], json.dumps(payload["data"])
                )
            )
        else:
            c = _CONTROL.match(rest)
            assert c, f"unparsed control line: {line}"
            out.append(KafkaRecord(offset, ts, c.group(1), None, 0, c.group(2)))
    return out


def metadata_type_ids(workdir: Path) -> dict[str, int]:
    """Kafka's MetadataRecordType name → api key, printed by a Java program run against Kafka's jars."""
    src = workdir / "MetadataTypes.java"
    src.write_text(_TYPES_JAVA)
    done = subprocess.run(
        ["java", *JVM_OPTS, "-cp", classpath(), str(src)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    pairs = (line.split() for line in done.stdout.splitlines() if line.strip())
    return {name: int(key) for name, key in pairs}
