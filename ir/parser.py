"""Read IR text (what ``str(graph)`` prints) back into a ``Graph``.

The grammar lives in ``grammar.lark``; lark's LALR parser calls the ``_Builder`` callbacks as each
rule is reduced, in text order, so the graph is built in one pass without a parse tree and without
recursion (deeply nested blocks and types cannot exhaust the Python stack). Every problem in the
text, syntactic or not, is raised as ``ir.ParseError`` with its line, column and offending text.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ir.core import SUBGRAPH, Block, Graph, Node, SourceRange, Value
from ir.errors import ParseError
from ir.kinds import IF, LOOP
from ir.parser_terms import (
    CONSTANT_TABLE,
    Term,
    _Fail,
    _TermBuilder,
    term_type,
    term_value,
)
from ir.registry import infer_types, lookup
from ir.types import (
    ANY,
    TENSOR,
    Type,
)

_SUBGRAPH_REF = re.compile(r"(.+)_([0-9]+)")


def parse(text: str, constants: dict[str, np.ndarray] | None = None) -> Graph:
    """Build the graph that ``text`` describes; ``ParseError`` for any malformed text.

    ``constants`` resolves array references, ``array(Float(512, 2048), ref="c0")``, as
    ``print_graph(graph, constants=table)`` writes them: the array must have the written dtype
    and shape, and is used as it is (not copied).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a str, not {type(text).__name__}")
    with _LOCK:
        parser = _parser()
        _BUILDER.run = _Run(constants)
        CONSTANT_TABLE["current"] = constants
        try:
            return parser.parse(text)
        except _Fail as e:
            raise _error(text, e.message, e.line, e.column, e.token) from None
        except UnexpectedInput as e:
            raise _syntax_error(text, e, parser) from None
        except RecursionError:
            raise _error(text, "the text is nested too deeply", 1, 1, "") from None
        finally:
            _BUILDER.run = None
            CONSTANT_TABLE["current"] = None


# -- graph building --------------------------------------------------------------------------------
class _GraphState:
    """One graph being read (the top graph or a ``with`` section): its names and open blocks."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.visible: dict[str, Value] = {}
        """values usable here: defined earlier, in this block or an enclosing one."""
        self.defined: dict[str, Token] = {}
        """every name defined so far in this graph, with where (for duplicate/scope errors)."""
        self.scopes: list[list[str]] = [[]]
        self.blocks: list[Block] = [graph.block]
        self.open_nodes: list[tuple[Node, Token, list[Token]]] = []
        """nodes whose blocks are being read, with their kind and output name tokens."""
        self.refs: list[tuple[Node, str, Token]] = []
        """subgraph nodes in text order: (node, printed kind ``kind_K``, token)."""
        self.block_tokens: dict[Block, tuple[Token, Token | None]] = {}
        self.header: Token | None = None
        """for a section, its ``kind_K`` token."""

    def define(self, tok: Token, value: Value) -> None:
        name = tok[1:]
        first = self.defined.get(name)
        if first is not None:
            raise _Fail(f"%{name} is defined twice (first at line {first.line})", tok)
        self.defined[name] = tok
        self.visible[name] = value
        self.scopes[-1].append(name)

    def resolve(self, tok: Token) -> Value:
        name = tok[1:]
        value = self.visible.get(name)
        if value is not None:
            return value
        first = self.defined.get(name)
        if first is not None:
            raise _Fail(f"%{name} is not visible here: it is defined inside a block "
                        f"(line {first.line})", tok)
        raise _Fail(f"undefined value %{name}", tok)

    def open_block(self, block: Block) -> None:
        self.blocks.append(block)
        self.scopes.append([])

    def close_block(self) -> None:
        self.blocks.pop()
        for name in self.scopes.pop():
            del self.visible[name]


class _Run:
    """The state of one ``parse`` call."""

    def __init__(self, constants: dict[str, np.ndarray] | None = None) -> None:
        self.graphs: list[_GraphState] = []
        self.constants = constants
        """the table array references resolve in (None: references are errors)."""

    @property
    def current(self) -> _GraphState:
        return self.graphs[-1]


class _Builder(_TermBuilder):
    """lark callbacks, one per grammar rule, called in text order as rules are reduced."""

    run: _Run | None = None

    # -- graphs and sections
    def graph_header(self, children: list[Any]) -> _GraphState:
        assert self.run is not None
        state = _GraphState(Graph())
        self.run.graphs.append(state)
        for tok, term in children[0] or ():
            state.define(tok, state.graph.add_input(_declared_type(term, TENSOR), tok[1:]))
        return state

    def return_stmt(self, children: list[Any]) -> None:
        state = self.run.current  # type: ignore[union-attr]
        state.graph.set_outputs([state.resolve(t) for t in children[0] or ()])

    def graph_def(self, children: list[Any]) -> _GraphState:
        return children[0]

    def section(self, children: list[Any]) -> _GraphState:
        tok, state = children
        state.header = tok
        return state

    def start(self, children: list[Any]) -> Graph:
        _attach_sections(children[0], children[1:])
        return children[0].graph

    # -- nodes
    def params(self, children: list[Any]) -> list[tuple[Token, Term | None]]:
        return children

    def param(self, children: list[Any]) -> tuple[Token, Term | None]:
        return children[0], children[1]

    def values(self, children: list[Token]) -> list[Token]:
        return children

    def attrs(self, children: list[Any]) -> list[Any]:
        return [c for c in children if c is not None]

    def attr(self, children: list[Any]) -> tuple[Token, Term]:
        return children[0], children[1]

    def node_head(self, children: list[Any]) -> None:
        outs, kind_tok, attrs, inputs, source = children
        state = self.run.current  # type: ignore[union-attr]
        kind, ref = _resolve_kind(kind_tok, len(state.refs))
        node = state.graph.create(
            kind, [state.resolve(t) for t in inputs or ()],
            [_declared_type(term, ANY) for _, term in outs or ()],
            _attributes(attrs or ()), source=_source(source),
            names=[tok[1:] for tok, _ in outs or ()])
        state.blocks[-1].append(node)
        if any(term is None for _, term in outs or ()):
            _infer_missing_types(node, outs)
        if ref:
            state.refs.append((node, str(kind_tok), kind_tok))
        state.open_nodes.append((node, kind_tok, [tok for tok, _ in outs or ()]))

    def stmt(self, children: list[Any]) -> None:
        state = self.run.current  # type: ignore[union-attr]
        node, kind_tok, out_toks = state.open_nodes.pop()
        _check_blocks(node, kind_tok, state.block_tokens)
        for tok, v in zip(out_toks, node.outputs):
            state.define(tok, v)

    def block_header(self, children: list[Any]) -> None:
        head, params = children[0], children[1]
        state = self.run.current  # type: ignore[union-attr]
        node = state.open_nodes[-1][0]
        if int(head[5:]) != len(node.blocks):
            raise _Fail(f"expected block{len(node.blocks)} here, found {head}", head)
        block = node.add_block()
        state.block_tokens[block] = (head, None)
        state.open_block(block)
        for tok, term in params or ():
            state.define(tok, block.add_param(_declared_type(term, TENSOR), tok[1:]))

    def block_end(self, children: list[Any]) -> None:
        state = self.run.current  # type: ignore[union-attr]
        block = state.blocks[-1]
        arrow, values = children[0], children[2]  # all tokens kept: '->' '(' values ')' SOURCE
        block.set_returns([state.resolve(t) for t in values or ()])
        state.close_block()
        state.block_tokens[block] = (state.block_tokens[block][0], arrow)


def _declared_type(term: Term | None, default: Type) -> Type:
    if term is None:
        return default
    return term_type(term)


def _resolve_kind(tok: Token, n_refs: int) -> tuple[str, bool]:
    """The registered kind for ``tok``; ``kind_K`` names the K-th subgraph node of this graph."""
    kind = str(tok)
    if lookup(kind) is not None:
        return kind, False
    m = _SUBGRAPH_REF.fullmatch(kind)
    if m is None or lookup(m.group(1)) is None:
        raise _Fail(f"unknown op kind {kind}", tok)
    if int(m.group(2)) != n_refs:
        raise _Fail(f"subgraph nodes are numbered in order: expected {m.group(1)}_{n_refs}, "
                    f"found {kind}", tok)
    return m.group(1), True


def _attributes(attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name_tok, term in attrs:
        name = str(name_tok)
        if name in out:
            raise _Fail(f"attribute {name} is given twice", name_tok)
        if name == SUBGRAPH:
            raise _Fail("a Subgraph is written as a `with kind_K = graph(...)` section", name_tok)
        out[name] = term_value(term)
    return out


def _source(tok: Token | None) -> SourceRange | None:
    if tok is None:
        return None
    parts = tok[1:].strip().rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return SourceRange(parts[0], int(parts[1]), int(parts[2]))
    raise _Fail("bad source position: expected '# file:line:col'", tok)


def _infer_missing_types(node: Node, outs: list[tuple[Token, Term | None]]) -> None:
    """Fill the output types the text left out from the op's type rule."""
    try:
        types = infer_types(node)
    except Exception as e:  # any rule failure means the text must spell the type out
        tok = next(t for t, term in outs if term is None)
        raise _Fail(f"cannot infer the type of {tok} ({e}); write '{tok} : Type'", tok) from None
    for (tok, term), v, t in zip(outs, node.outputs, list(types) + [ANY] * len(outs)):
        if term is None and (t is ANY or len(types) != len(outs)):
            raise _Fail(f"cannot infer the type of {tok}; write '{tok} : Type'", tok)
        if term is None:
            v.type = t


def _check_blocks(node: Node, kind_tok: Token, block_tokens: dict[Block, Any]) -> None:
    """The block count of every op, and the block arities of ``prim::If`` / ``prim::Loop``."""
    op = lookup(node.kind)
    expected = op.blocks if op is not None else 0
    if len(node.blocks) != expected:
        raise _Fail(f"{node.kind} takes {expected} block(s), found {len(node.blocks)}", kind_tok)
    if node.kind == IF:
        _check_arity(node, 0, len(node.outputs), block_tokens, "each branch of prim::If")
    elif node.kind == LOOP:
        if len(node.inputs) < 2:
            raise _Fail("prim::Loop takes (max_trip_count, cond, *carried)", kind_tok)
        carried = len(node.inputs) - 2
        if len(node.outputs) != carried:
            raise _Fail(f"prim::Loop carries {carried} value(s) but has {len(node.outputs)} "
                        "output(s)", kind_tok)
        _check_arity(node, carried + 1, carried + 1, block_tokens, "the prim::Loop body")


def _check_arity(node: Node, n_params: int, n_returns: int, block_tokens: dict[Block, Any],
                 what: str) -> None:
    for block in node.blocks:
        head, end = block_tokens[block]
        if len(block.params) != n_params:
            raise _Fail(f"{what} takes {n_params} block parameter(s), found "
                        f"{len(block.params)}", head)
        if len(block.returns) != n_returns:
            raise _Fail(f"{what} must return {n_returns} value(s), found {len(block.returns)}",
                        end)


def _attach_sections(top: _GraphState, sections: list[_GraphState]) -> None:
    """Give each subgraph node its section: a graph's sections follow it in node order, each
    followed by its own sections (pre-order), as the printer writes them."""
    pos = 0
    stack: list[tuple[_GraphState, int]] = [(top, 0)]
    while stack:
        state, i = stack.pop()
        if i == len(state.refs):
            continue
        stack.append((state, i + 1))
        node, label, tok = state.refs[i]
        if pos == len(sections):
            raise _Fail(f"no `with {label} = graph(...)` section for {label}", tok)
        section = sections[pos]
        pos += 1
        if str(section.header) != label:
            raise _Fail(f"expected the section for {label}, found {section.header}",
                        section.header)
        node.attrs[SUBGRAPH] = section.graph
        stack.append((section, 0))
    if pos < len(sections):
        extra = sections[pos].header
        raise _Fail(f"section {extra} belongs to no subgraph node", extra)


# -- the lark parser, built once per process ------------------------------------------------------
_LOCK = threading.Lock()
_BUILDER = _Builder()
_PARSER: Lark | None = None


def _parser() -> Lark:
    global _PARSER
    if _PARSER is None:
        _PARSER = Lark.open("grammar.lark", rel_to=__file__, parser="lalr",
                            transformer=_BUILDER, maybe_placeholders=True)
    return _PARSER


_TOKEN_WORDS = {
    "VALUE": "a value like %x", "KIND": "an op kind like tensor::add", "NAME": "a name",
    "INT": "an integer", "FLOAT": "a float", "STRING": "a string", "SOURCE": "'# file:line:col'",
    "BLOCK": "a block like block0(...)", "ELLIPSIS": "'...'", "$END": "the end of the text",
}


_FOUND_WORDS = {
    "VALUE": "value", "KIND": "op kind", "NAME": "name", "INT": "number", "FLOAT": "number",
    "STRING": "string", "BLOCK": "block", "SOURCE": "comment",
}


def _describe_terminal(name: str, parser: Lark) -> str:
    if name in _TOKEN_WORDS:
        return _TOKEN_WORDS[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'" if pattern.type == "str" else name


def _expected_phrase(names: Any, parser: Lark) -> str:
    words = sorted({_describe_terminal(n, parser) for n in names})
    if not words:
        return ""
    if len(words) == 1:
        return f"; expected {words[0]}"
    return f"; expected {', '.join(words[:-1])} or {words[-1]}"


def _syntax_error(text: str, e: UnexpectedInput, parser: Lark) -> ParseError:
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        if ch == '"':
            return _error(text, "unterminated string", e.line, e.column, ch)
        return _error(text, f"unexpected character {ch!r}", e.line, e.column, ch)
    if isinstance(e, UnexpectedEOF) or (
            isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        line, column = _end_position(text)
        expected = _expected_phrase(getattr(e, "expected", ()) or (), parser)
        return _error(text, f"unexpected end of text{expected}", line, column, "")
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    found = _describe_terminal(tok.type, parser)
    if tok.type in _FOUND_WORDS:
        found = f"{_FOUND_WORDS[tok.type]} {str(tok)!r}"
    message = f"unexpected {found}{_expected_phrase(e.expected, parser)}"
    return _error(text, message, tok.line or 1, tok.column or 1, str(tok))


def _end_position(text: str) -> tuple[int, int]:
    body = text.rstrip()
    line = body.count("\n") + 1
    return line, len(body) - (body.rfind("\n") + 1) + 1


def _error(text: str, message: str, line: int, column: int, token: str) -> ParseError:
    lines = text.split("\n")
    context = ""
    if 1 <= line <= len(lines):
        src = lines[line - 1]
        context = f"  {src}\n  {' ' * (column - 1)}^"
    return ParseError(message, line, column, token, context)
