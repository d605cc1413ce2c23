"""Test-side names for the local quorum harness (tools.local_quorum)."""

from tools.local_quorum import CLUSTER_ID, KRAFTD, LocalQuorum, free_ports

Cluster = LocalQuorum

__all__ = ["CLUSTER_ID", "KRAFTD", "Cluster", "free_ports"]
