"""``python -m windowkit.cli``: the ``windowkit`` command."""

import sys

from windowkit.cli import main

if __name__ == "__main__":
    sys.exit(main())
