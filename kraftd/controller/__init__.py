"""kraftd.controller: the KRaft metadata state machine (sans-IO, like kraftd.core).

Records in, image out: every node replays committed metadata records into a :class:`MetadataImage`; the leader
also validates writes against its uncommitted view. No asyncio, sockets, files or clocks here.
"""
