"""kraftd.shell.apis: The APIs this node serves: the table, routing, the shell's own answers, refusals."""
