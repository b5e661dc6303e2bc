"""The package version, in a module of its own so that saved artifacts can record it without
importing the package (``script/__init__`` imports everything)."""

__version__ = "0.1.0"
"""The package version (pyproject.toml's); saved models record it."""
