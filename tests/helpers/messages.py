"""Golden messages shared by the message tests."""

from __future__ import annotations

from tests.messages.support import (
    hx,
)

# ---- first written for tests/messages/test_golden_election.py ----------------------------------------------
VOTE_REQUEST_V0 = hx(
    "03 6331"  # ClusterId: compact string, len 2 (+1), "c1"
    "02"  # Topics: compact array, 1 element (+1)
    "13 {META}"  # TopicName: compact string, len 18 (+1)
    "02"  # Partitions: compact array, 1 element
    "00000000"  # PartitionIndex 0
    "00000005"  # ReplicaEpoch 5
    "00000001"  # ReplicaId 1
    "00000004"  # LastOffsetEpoch 4
    "0000000000000064"  # LastOffset 100
    "00"  # PartitionData tagged fields: none
    "00"  # TopicData tagged fields: none
    "00"  # top-level tagged fields: none
)
