"""The errors users see: compile-time ``ScriptError``, call-time ``SignatureError`` and
``LoadError`` for a saved model that cannot be loaded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


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
        self.source_line, self.end_col = source_line, end_col
        text = message
        if file is not None and line is not None:
            text = f"{file}:{line}:{(col or 0) + 1}: {message}"
            if source_line:
                text += "\n" + render_caret(source_line, col or 0, end_col)
        super().__init__(text)

    @property
    def fields(self) -> tuple[Any, ...]:
        """The constructor's arguments: ``ScriptError(*e.fields)`` is the same error (an IR
        attribute holds them: ``ir.ops.prim.DEFERRED_ERROR``)."""
        return (self.reason, self.file, self.line, self.col, self.source_line, self.end_col)

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


class ArgumentShapeError(SignatureError, ValueError):
    """A ``SignatureError`` for arguments whose shapes the function's code cannot take (numpy
    raises a ``ValueError`` there, or an ``IndexError``/``AxisError``: a caller's ``except
    ValueError`` catches this too)."""


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


USER_ERRORS = (ScriptError, SignatureError, LoadError)
"""The exceptions compiling, calling or differentiating may raise at a user (besides the errors
the program itself raises when it runs, as its plain Python would)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """The function a compile or differentiate step is about: where its errors point when the
    graph node at fault is not known."""

    name: str
    """its qualified name."""
    file: str | None = None
    """the file of its ``def``."""
    line: int | None = None
    """the line of its ``def`` (its first decorator's)."""
    source: SourceInfo | None = None
    """its file's lines, when compiled."""

    @classmethod
    def of(cls, fn: object, source: SourceInfo | None = None, name: str | None = None) -> Origin:
        """The origin of Python function ``fn`` (None for a loaded graph: then ``name``)."""
        code = getattr(fn, "__code__", None)
        qualname = name or getattr(fn, "__qualname__", None) or "<function>"
        if code is None:
            return cls(qualname, source.file if source else None, None, source)
        return cls(qualname, code.co_filename, code.co_firstlineno, source)

    @classmethod
    def of_module(cls, module: object) -> Origin:
        """The origin of a module (or scripted function) being frozen or saved: its class."""
        import inspect
        target = getattr(module, "python_module", None) or module
        if getattr(target, "__code__", None) is not None:
            return cls.of(target)
        kind = type(target)
        try:
            file = inspect.getsourcefile(kind)
            line = inspect.getsourcelines(kind)[1]
        except (OSError, TypeError):
            file, line = None, None
        return cls(kind.__qualname__, file, line)


def as_script_error(exc: BaseException, origin: Origin, doing: str) -> ScriptError:
    """A ``ScriptError`` for an internal exception raised while ``doing`` (``"compiling"``,
    ``"differentiating"``) ``origin``: at the user's line of the graph node it names when it
    names one (``IRError.node``), else at the ``def``. A gradient the compiler refuses keeps its
    message ("cannot differentiate ..."); anything else is reported as a compiler bug."""
    text = str(exc)
    if "cannot differentiate" in text and _is_ir_error(exc):
        message = text
    else:
        message = (f"internal compiler error while {doing} '{origin.name}': "
                   f"{type(exc).__name__}: {text} (this is a bug in rnnscript; please report "
                   "it with the program)")
    where = _node_source(getattr(exc, "node", None))
    if where is not None:
        file, lines = _resolve(where.file, origin.source)
        line_text = lines.line(where.line) if lines else None
        return ScriptError(message, file, where.line, where.col, line_text)
    return at_def(origin, message)


def at_node(node: object, message: str, source: SourceInfo | None = None) -> ScriptError:
    """A ``ScriptError`` at the user's line of graph node ``node`` (or of the nearest node around
    it that has a source position); without a position, the bare message."""
    where = _node_source(node)
    if where is None:
        return ScriptError(message)
    file, lines = _resolve(where.file, source)
    return ScriptError(message, file, where.line, where.col,
                       lines.line(where.line) if lines else None)


def at_def(origin: Origin, message: str) -> ScriptError:
    """A ``ScriptError`` pointing at the ``def`` of the function ``origin`` describes."""
    if origin.file is not None and origin.line is not None:
        import linecache
        return ScriptError(message, origin.file, origin.line, 0,
                           linecache.getline(origin.file, origin.line).rstrip("\n") or None)
    return ScriptError(message)


def _is_ir_error(exc: BaseException) -> bool:
    from ir.errors import IRError
    return isinstance(exc, IRError)


def _node_source(node: object):
    """The source position of ``node`` or, for a node a pass made, of the nearest node around
    it that has one (an enclosing If/Loop, else a node before it in its block)."""
    seen = 0
    while node is not None and seen < 10_000:
        seen += 1
        source = getattr(node, "source", None)
        if source is not None:
            return source
        before = getattr(node, "prev", None)
        if before is not None and getattr(before, "kind", None) != "prim::Param":
            node = before
            continue
        block = getattr(node, "owner", None)
        node = getattr(block, "owner", None)
    return None


def _resolve(file: str, source: SourceInfo | None) -> tuple[str, SourceInfo | None]:
    """The full path and lines of a file a node names by its base name: the function's own
    file, else a file Python has read whose name ends so."""
    import linecache
    import os
    if source is not None and os.path.basename(source.file) == file:
        return source.file, source
    for path in list(linecache.cache):
        if os.path.basename(path) == file:
            lines = tuple(line.rstrip("\n") for line in linecache.getlines(path))
            return path, SourceInfo(path, lines)
    return file, None


@contextmanager
def reported(origin: Callable[[], Origin], doing: str) -> Iterator[None]:
    """Let only ``USER_ERRORS`` out of compiling or differentiating: any other exception from
    the compiler becomes a ``ScriptError`` at the user's line (``as_script_error``).
    ``origin`` is called only when an error needs it."""
    try:
        yield
    except USER_ERRORS:
        raise
    except (MemoryError, KeyboardInterrupt, OSError):  # the machine's, not the compiler's
        raise
    except Exception as e:  # noqa: BLE001 -- the boundary between the compiler and its user
        raise as_script_error(e, origin(), doing) from e
