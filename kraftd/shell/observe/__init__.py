"""kraftd.shell.observe: What an operator sees: metrics, network and event logs, loop lag."""
