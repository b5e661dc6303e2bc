"""A progress bar on stderr: tqdm when it is installed, else a plain counter."""

from __future__ import annotations

import sys
from typing import Any


class Progress:
    """``total`` steps; ``describe(name)`` names the current variant, ``update()`` counts one."""

    def __init__(self, total: int, enabled: bool = True):
        self.total = total
        self.count = 0
        self.name = ""
        self.enabled = enabled and total > 0
        self._bar: Any = None
        if not self.enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self._bar = tqdm(total=total, file=sys.stderr, leave=False, unit="it",
                         dynamic_ncols=True)

    def describe(self, name: str) -> None:
        self.name = name
        if self._bar is not None:
            self._bar.set_description(name)
        self._draw()

    def update(self) -> None:
        self.count += 1
        if self._bar is not None:
            self._bar.update(1)
        self._draw()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            print(file=sys.stderr, flush=True)

    def _draw(self) -> None:
        if not self.enabled or self._bar is not None:
            return
        print(f"\r  {self.count}/{self.total} {self.name:<24}", end="", file=sys.stderr,
              flush=True)
