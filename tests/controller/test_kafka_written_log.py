"""We decode a metadata log and a bootstrap checkpoint that Kafka 4.3.1 wrote, and re-encode them byte for byte.

The fixtures were written by real Kafka 4.3.1 processes (``kafka.tools.StorageTool format`` with defaults, then a
single ``process.roles=controller`` node run for ~20 s on an empty log); they are golden bytes from the peer:
1. every record of every batch decodes with the generated class its frame names, and re-encoding the decoded
   object at the same version gives back exactly Kafka's bytes;
2. the records are the ones Kafka's controller writes on its first activation (bootstrap transaction with the
   finalized features and the cluster-level min.insync.replicas), then its RegisterControllerRecord, then NoOps.
"""

from __future__ import annotations

from pathlib import Path

from generated.config_record import ConfigRecord
from generated.feature_level_record import FeatureLevelRecord
from kraftd.storage.bootstrap_metadata import read_bootstrap_metadata
from kwire.batches import iter_batches
from kwire.metadata_frame import decode_metadata_record, encode_metadata_record

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "kafka-4.3.1-controller-00000000000000000000.log"


def _records(data: bytes) -> list[tuple[int, int, object, bytes]]:
    out = []
    for view in iter_batches(data):
        batch = view.decode()
        if batch.is_control:
            continue
        for rec in batch.records:
            assert rec.key is None and rec.value is not None
            key, version, obj = decode_metadata_record(rec.value)
            out.append((key, version, obj, bytes(rec.value)))
    return out


def test_kafka_controller_log_decodes_and_reencodes_exactly() -> None:
    records = _records(LOG.read_bytes())
    assert len(records) > 12
    for key, version, obj, raw in records:
        assert encode_metadata_record(key, version, obj) == raw
    names = [type(obj).__name__ for _, _, obj, _ in records]
    assert names[:10] == [
        "BeginTransactionRecord",
        *["FeatureLevelRecord"] * 6,
        "ConfigRecord",
        "EndTransactionRecord",
        "RegisterControllerRecord",
    ]
    assert set(names[10:]) == {"NoOpRecord"}
    features = {o.name: o.feature_level for _, _, o, _ in records if isinstance(o, FeatureLevelRecord)}
    assert features["metadata.version"] == 30
    config = next(o for _, _, o, _ in records if isinstance(o, ConfigRecord))
    assert (config.resource_type, config.resource_name, config.name, config.value) == (
        4,
        "",
        "min.insync.replicas",
        "1",
    )
    reg = records[9][2]
    assert reg.controller_id == 1 and reg.end_points[0].name == "CONTROLLER"  # type: ignore[attr-defined]
    assert {f.name for f in reg.features} >= {"metadata.version", "kraft.version"}  # type: ignore[attr-defined]


def test_kafka_bootstrap_checkpoint_reads(tmp_path: Path) -> None:
    (tmp_path / "bootstrap.checkpoint").write_bytes(
        (FIXTURES / "kafka-4.3.1-bootstrap.checkpoint").read_bytes()
    )
    values = read_bootstrap_metadata(tmp_path)
    assert values is not None
    decoded = [decode_metadata_record(v)[2] for v in values]
    assert [(r.name, r.feature_level) for r in decoded] == [  # type: ignore[attr-defined]
        ("metadata.version", 30),
        ("eligible.leader.replicas.version", 1),
        ("group.version", 1),
        ("share.version", 1),
        ("streams.version", 1),
        ("transaction.version", 2),
    ]
