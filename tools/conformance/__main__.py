"""``python -m tools.conformance``: the same as ``kraft-conformance``."""

from tools.conformance.cli import main

main()
