"""kraftd.storage: Kafka's on-disk layout for the ``__cluster_metadata`` partition.

Layout (contract with Kafka's own tools):
1. ``<metadata.log.dir>/meta.properties`` (version 1, cluster.id, node.id, directory.id).
2. ``<metadata.log.dir>/__cluster_metadata-0/`` holds segments ``<20-digit base offset>.log``, ``quorum-state``,
   ``leader-epoch-checkpoint`` and snapshots ``<20-digit end offset>-<10-digit epoch>.checkpoint``.
3. Every small-file write is tmp + fsync + rename (+ directory fsync); a failed fsync raises
   :class:`~kraftd.storage.errors.LogIOError`, which the node treats as fatal.
"""
