"""``python -m streamwrite.cli``: the command line (the same as ``python -m streamwrite``)."""

from __future__ import annotations

import sys

from streamwrite.cli import main

if __name__ == "__main__":
    sys.exit(main())
