"""``python -m tools.decode``: the same as ``kraft-decode``."""

from tools.decode.cli import main

main()
