"""Tools that look at the runtime from outside: ``profiler`` (``script.profile()``) and ``explain``
(``fn.explain(...)``, ``strict=True``). They plug in through ``script.runtime.instrument``."""
