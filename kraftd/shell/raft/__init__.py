"""kraftd.shell.raft: The Raft driver's parts: clock, inbox, flushing, commit waiters, persistence, read barriers, snapshots."""
