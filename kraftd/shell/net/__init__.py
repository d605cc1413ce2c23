"""kraftd.shell.net: Peers and listeners: transport, configuration wiring, voter membership."""
