"""The messages of the Python constructs the language refuses as a whole (``lambda``,
``with``, ``global`` ...): what each is and, where one can say, what to write instead."""

from __future__ import annotations

import ast

_GLOBAL = ("global/nonlocal are not supported (a global is read without it; to change one, "
           "return the new value and assign it where the function is called)")

UNSUPPORTED = {
    "Lambda": "lambda is", "With": "with statements are", "AsyncWith": "async with statements are",
    "Try": "try/except is", "TryStar": "try/except* is", "ClassDef": "class definitions are",
    "FunctionDef": "nested function definitions are",
    "AsyncFunctionDef": "nested function definitions are", "Delete": "del is",
    "Yield": "generators/yield are", "YieldFrom": "generators/yield are",
    "GeneratorExp": "generator expressions are", "SetComp": "set comprehensions are",
"NamedExpr": "the walrus operator := is",
    "Await": "await is", "Import": "import statements are", "ImportFrom": "import statements are",
    "Set": "set literals are",
    "Match": "match statements are", "AsyncFor": "async for is",
}
"""Construct (its ``ast`` class name) -> what it is, for "... not supported"."""

MESSAGES = {"Global": _GLOBAL, "Nonlocal": _GLOBAL}
"""Whole messages of the constructs whose message also says what to write instead."""


def unsupported_message(node: ast.AST) -> str:
    """The ScriptError message for ``node``, a construct with no ``visit_`` method."""
    name = type(node).__name__
    if name in MESSAGES:
        return MESSAGES[name]
    return f"{UNSUPPORTED.get(name, repr(name) + ' is')} not supported"
