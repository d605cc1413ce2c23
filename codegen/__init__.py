"""kraftd's message code generator: Kafka JSON specs → flat Python encoders/decoders in ``generated/``.

Pipeline (each step its own module): parse (JSON with comments → model) → validate (Kafka's generator
rules) → lower (per-version flat function bodies) → emit (Jinja2 templates + ruff format).
"""
