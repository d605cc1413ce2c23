"""kraftd.sim: a deterministic, event-driven simulator for kraftd.core (see ``python -m kraftd.sim -h``)."""
