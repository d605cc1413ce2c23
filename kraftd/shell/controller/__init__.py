"""kraftd.shell.controller: The controller's operations as the shell runs them: glue, broker RPCs, topic, partition and security admin."""
