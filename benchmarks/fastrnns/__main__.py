"""``python -m benchmarks.fastrnns``: see ``benchmarks/fastrnns/bench.py`` and ``--help``."""

import sys

from benchmarks.fastrnns.bench import main

if __name__ == "__main__":
    sys.exit(main())
