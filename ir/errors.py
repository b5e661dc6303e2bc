"""Errors raised by the IR layer."""

from __future__ import annotations


class IRError(Exception):
    """Misuse of the IR API (erasing a used value, inserting a node twice, ...), or a graph a
    transformation cannot handle (a gradient it refuses).

    ``node`` is the node it is about, when known: its ``source`` is the user's line, which the
    user-facing layer (``script``) turns into a ``ScriptError`` pointing there.
    """

    def __init__(self, message: str = "", node: object = None):
        super().__init__(message)
        self.node = node
        """the offending ``Node`` (or None when unknown)."""


class VerifyError(IRError):
    """A malformed graph; the message names the node and what is wrong."""


class ParseError(IRError):
    """Malformed IR text; carries the line, column and offending token."""

    def __init__(self, message: str, line: int, column: int, token: str = "", context: str = ""):
        where = f"line {line}, column {column}"
        text = f"{message} at {where}" + (f" (near {token!r})" if token else "")
        if context:
            text += "\n" + context
        super().__init__(text)
        self.line = line
        """1-based line of the error."""
        self.column = column
        """1-based column of the error."""
        self.token = token
        """the offending text."""
