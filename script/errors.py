"""The errors users see: compile-time ``ScriptError``, call-time ``SignatureError`` and
``LoadError`` for a saved model that cannot be loaded."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where a scripted function's source lives, to point errors at the user's lines."""

    file: str
    """the file name (``inspect.getsourcefile``)."""
    lines: tuple[str, ...]
    """the whole file's lines, without newlines, so line numbers are absolute."""

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 1 <= lineno <= len(self.lines) else ""


class ScriptError(Exception):
    """A program the compiler cannot accept.

    The message names ``file:line:col``, quotes the source line and puts a caret under the
    offending construct.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None, source_line: str | None = None,
                 end_col: int | None = None):
        self.reason = message
        """what is wrong, without the position."""
        self.file, self.line, self.col = file, line, col
        text = message
        if file is not None and line is not None:
            text = f"{file}:{line}:{(col or 0) + 1}: {message}"
            if source_line:
                text += "\n" + render_caret(source_line, col or 0, end_col)
        super().__init__(text)

    @classmethod
    def at(cls, node: object, source: SourceInfo | None, message: str) -> ScriptError:
        """An error pointing at an ``ast`` node (anything with lineno/col_offset)."""
        line = getattr(node, "lineno", None)
        if source is None or line is None:
            return cls(message)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", line)
        end_col = getattr(node, "end_col_offset", None) if end_line == line else None
        return cls(message, source.file, line, col, source.line(line), end_col)


class SignatureError(TypeError):
    """A call whose arguments the compiled function cannot take (arity, dtype, shape, device).

    Raised before any compiled code runs; the message names the argument.
    """


class LoadError(Exception):
    """A saved model file that ``script.load`` refuses: unreadable, truncated or corrupted,
    written by an unknown format version, failing a checksum, or describing something the
    loader does not accept (an unknown op kind, a pickled array, a malformed graph).

    ``reason`` says which, without the file name.
    """

    def __init__(self, reason: str, path: str | None = None):
        self.reason = reason
        """what is wrong."""
        self.path = path
        """the file, when known."""
        super().__init__(f"cannot load {path}: {reason}" if path else reason)


def render_caret(source_line: str, col: int, end_col: int | None = None) -> str:
    """The source line and a caret line under columns ``col``..``end_col``."""
    text = source_line.rstrip("\n")
    width = max(1, (end_col if end_col is not None else col + 1) - col)
    return f"    {text}\n    {' ' * col}^{'~' * (width - 1)}"
