"""``python -m streamwrite``: the command line (:mod:`streamwrite.cli`)."""

from __future__ import annotations

import sys

from streamwrite.cli import main

if __name__ == "__main__":
    sys.exit(main())
