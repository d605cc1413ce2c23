"""kraftd: a KRaft controller quorum (KIP-595, KIP-996, KIP-630, KIP-853, KIP-650)."""
