"""``python -m streamwrite``: the command line (:mod:`streamwrite.cli`)."""

from __future__ import annotations

import sys

try:
    from streamwrite.cli import main
except KeyboardInterrupt:  # Ctrl-C while the imports load: nothing ran yet
    print("streamwrite: interrupted: nothing was changed", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
