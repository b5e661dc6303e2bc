"""numpy functions written as compositions of ops, and the builtin ``sorted``.

``np.outer`` and ``np.array`` of arrays become other ops (a column times a row; a copy or a
stack), so the passes and differentiation see those ops. (``np.dot``, ``np.hstack`` and
``np.vstack``, whose meaning depends on numbers of axes that are known only once a function is
specialized, are ops that canonicalization rewrites then.)
``sorted(items, key=..., reverse=...)`` over numbers or tuples sorts at run time by
keys that a comprehension computes.
"""

from __future__ import annotations

import ast
import operator
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import Value
from ir.ops.elementwise import UFUNC_ATTR
from ir.ops.numpy_ops import SCALAR_ATTR, array_rank
from ir.registry import op_def
from ir.types import BOOL, FLOAT, INT, INT_DTYPES, NONE, STR, ListType, TensorType, TupleType
from script.frontend.env import at_position, end_of
from script.frontend.numpy_shims import SHIMS
from script.frontend.whole_writes import ZERO_D_ARRAY, made_as_scalar

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

NUMPY_COMPOSITES = {"outer": "numpy_outer", "array": "numpy_array", "where": "numpy_where",
                    "take": "numpy_take", "concatenate": "numpy_concatenate",
                    "flip": "numpy_flip", "fliplr": "numpy_flip_lr",
                    "flipud": "numpy_flip_lr", "asarray": "numpy_asarray", "eye": "numpy_eye",
                    "tri": "numpy_eye", "tril": "numpy_triangle", "triu": "numpy_triangle",
                    "roll": "numpy_roll", "linalg.norm": "linalg_norm", "split": "numpy_split",
                    "ascontiguousarray": "numpy_asarray", "logaddexp": "numpy_logaddexp",
                    "isscalar": "numpy_isscalar", "atleast_1d": "numpy_atleast",
                    "atleast_2d": "numpy_atleast", "size": "numpy_size",
                    "isnan": "numpy_isclass", "isinf": "numpy_isclass",
                    "isfinite": "numpy_isclass", "diag": "numpy_diag", "dtype": "numpy_dtype",
                    "einsum": "numpy_einsum", "isclose": "numpy_isclose",
                    "allclose": "numpy_allclose", "identity": "numpy_identity",
                    "trace": "numpy_trace", "diff": "numpy_diff", "linspace": "numpy_linspace",
                    "tensordot": "numpy_tensordot", "inner": "numpy_inner",
                    "linalg.slogdet": "numpy_slogdet", "hsplit": "numpy_split_along",
                    "vsplit": "numpy_split_along", "dsplit": "numpy_split_along",
                    "broadcast_to": "numpy_broadcast_to",
                    **dict.fromkeys(SHIMS, "numpy_shim"),
                    **{name: "numpy_scalar_type" for name in (
                        "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                        "uint8", "bool_")}}
"""numpy function name -> the FunctionCompiler method that writes it."""
_composite_ids: dict[int, tuple[Any, str]] = {}


SCIPY_COMPOSITES = {"special": {"expit": "scipy_expit", "logsumexp": "scipy_logsumexp"},
                    "linalg": {"inv": "scipy_inv", "solve": "scipy_solve"}}
"""``scipy.special`` and ``scipy.linalg`` function names -> the FunctionCompiler method that
writes a call (when the program has imported scipy: it is not a dependency)."""


def numpy_composite(obj: Any) -> str | None:
    """The FunctionCompiler method writing a call of numpy (or ``scipy.special``) function
    ``obj``, or None."""
    if not _composite_ids:
        for name, method in NUMPY_COMPOSITES.items():
            fn = operator.attrgetter(name)(np)  # "linalg.norm": np.linalg.norm
            _composite_ids[id(fn)] = (fn, method)
    entry = _composite_ids.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1]
    for module, methods in SCIPY_COMPOSITES.items():
        found = sys.modules.get(f"scipy.{module}")
        for name, method in methods.items() if found is not None else ():
            if getattr(found, name, None) is obj:
                return method
    return None


class NumpyMixin:
    """Calls of numpy functions that are compositions of ops, and ``sorted``."""

    def numpy_args(self: FunctionCompiler, node: ast.Call, display: str, names: list[str],
                   required: int, receiver: Any = None) -> list[Any]:
        """The values of a call's arguments by ``names`` (None for one not given)."""
        given: list[Any] = ([receiver] if receiver is not None else []) + list(node.args)
        if len(given) > len(names):
            raise self.error(node, f"{display}() takes at most {len(names)} arguments")
        found: list[Any] = given + [None] * (len(names) - len(given))
        for kw in node.keywords:
            if kw.arg not in names:
                raise self.error(kw, f"{display}(): the argument '{kw.arg}' is not supported")
            found[names.index(kw.arg)] = kw.value
        missing = [n for n, v in zip(names[:required], found) if v is None]
        if missing:
            raise self.error(node, f"{display}() missing required argument '{missing[0]}'")
        return [v if v is None or not isinstance(v, ast.AST) else self.expr(v) for v in found]

    # -- numpy scalars --------------------------------------------------------------------------
    def numpy_scalar_type(self: FunctionCompiler, node: ast.Call) -> Any:
        """``np.float32(x)`` and the other scalar types: a number becomes a 0-d array of that
        dtype (numpy's scalar: it promotes arrays as an array of that dtype does, where a Python
        number would not), an array is cast (``x.astype``)."""
        dtype = np.dtype(self.resolve_static(node.func)).name
        display = ast.unparse(node.func)
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{display}() takes exactly one positional argument")
        value = self.expr(node.args[0])
        if isinstance(value.type, TensorType):
            return self.cast_unless_same(value, self.const(dtype), node)
        if value.type not in (INT, FLOAT, BOOL):
            raise self.error(node.args[0], f"{display}() of {value.type}: give a number or "
                             "an array")
        return self.numpy_scalar(value, self.const(dtype))

    def numpy_scalar(self: FunctionCompiler, value: Any, dtype: Any) -> Any:
        """A number as the numpy scalar of ``dtype`` (None: numpy's for the number): a 0-d
        array in the graph, a numpy scalar (``np.float64``) at run time (``SCALAR_ATTR``)."""
        return self.emit("tensor::array", [value, dtype], attrs={SCALAR_ATTR: True}).output

    def ufunc_result(self: FunctionCompiler, value: Any) -> Any:
        """What a numpy ufunc gives for Python numbers: a numpy scalar (``np.sqrt(3)`` is a
        ``np.float64``, ``np.negative(3)`` a ``np.int64``), which promotes a float32 array to
        float64 where the Python float ``3 ** 0.5`` would leave it float32: such a number
        becomes a 0-d array of numpy's dtype (``np.array``'s), the same for promotion."""
        if isinstance(value, Value) and value.type in (INT, FLOAT, BOOL):
            return self.numpy_scalar(value, self.const(None))
        return value

    def numbers_among_arrays(self: FunctionCompiler, value: Any, display: str) -> bool:
        """Whether ``value`` passed to the numpy function ``display`` is a tuple of arrays and
        numbers, a number among them."""
        t = value.type
        numbers = (INT, FLOAT, BOOL)
        return display.startswith("np.") and isinstance(t, TupleType) and \
            any(e in numbers for e in t.elements) and \
            all(e in numbers or isinstance(e, TensorType) for e in t.elements)

    def numbers_as_arrays(self: FunctionCompiler, value: Any) -> Any:
        """The items of the tuple ``value`` as a list, each number a 0-d array of numpy's dtype
        for it, as numpy's joins take them (Mantas Lukosevicius' minimal ESN: ``np.vstack((1,
        u))``; a list, as a literal passed to them is, whose gradient the joins know)."""
        items = self.emit("prim::TupleUnpack", [value], list(value.type.elements)).outputs
        return self.emit_value("prim::ListConstruct", [self.ufunc_result(v) for v in items])

    # -- scipy.special ----------------------------------------------------------------------------
    def scipy_expit(self: FunctionCompiler, node: ast.Call) -> Any:
        """scipy.special.expit(x): the logistic sigmoid 1 / (1 + exp(-x))."""
        (x,) = self.numpy_args(node, "scipy.special.expit", ["x"], 1)
        return self.emit_value("tensor::sigmoid", [x])

    def scipy_inv(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.scipy_linalg(node, "inv")

    def scipy_solve(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.scipy_linalg(node, "solve")

    def scipy_linalg(self: FunctionCompiler, node: ast.Call, name: str) -> Any:
        """scipy.linalg.inv(a) / scipy.linalg.solve(a, b) of a matrix ``a`` (and a vector or
        matrix ``b``): numpy.linalg's ops, which compute what scipy's do (LAPACK's gesv; float32
        kept, integers as float64). scipy's keywords and stacks of matrices are not supported;
        a stack is refused when the function is specialized."""
        solve = name == "solve"
        names = ["a", "b"] if solve else ["a"]
        values = self.numpy_args(node, f"scipy.linalg.{name}", names, len(names))
        for v in values:
            if not isinstance(v.type, TensorType):
                raise self.error(node, f"scipy.linalg.{name}() of a {v.type}: pass arrays")
        for v, most in zip(values, (2, 2)):  # a matrix, a vector or matrix b
            fits = self.binary("<=", self.emit_value("tensor::ndim", [v]), self.const(most), node)
            self.emit_if(fits, lambda: None, lambda: self.raise_exception(
                f"scipy.linalg.{name}() of more than {most} axes is not supported here (use "
                "np.linalg's, which takes stacks)", "ValueError"), end_of(node), node)
        return self.emit_value("tensor::solve" if solve else "tensor::inv", values)

    def scipy_logsumexp(self: FunctionCompiler, node: ast.Call) -> Any:
        """scipy.special.logsumexp(a, axis=None, keepdims=False): ``m + log(sum(exp(a - m)))``
        with ``m`` the maximum along ``axis`` (0 where it is not finite, as scipy does);
        ``b`` and ``return_sign`` are refused."""
        given = dict(zip(["a", "axis", "b", "keepdims", "return_sign"], node.args)) | {
            kw.arg: kw.value for kw in node.keywords}
        extra = set(given) - {"a", "axis", "keepdims"}
        if extra or "a" not in given:
            raise self.error(node, "scipy.special.logsumexp() takes a, axis and keepdims here"
                             + (f" (not {', '.join(sorted(extra))})" if extra else ""))
        a = self.expr(given["a"])
        if not isinstance(a.type, TensorType):
            raise self.error(given["a"], f"scipy.special.logsumexp() of a {a.type}: pass an "
                             "array")
        axis = self.expr(given["axis"]) if "axis" in given else self.const(None)
        keepdims = self.expr(given["keepdims"]) if "keepdims" in given else self.const(False)
        if not keepdims.is_constant or type(keepdims.constant) is not bool:
            raise self.error(node, "scipy.special.logsumexp(): keepdims must be True or False")
        m = self.emit_value("tensor::amax", [a, axis, self.const(True)])
        finite = self.emit_value("tensor::lt", [self.emit_value("tensor::abs", [m]),
                                                self.const(float("inf"))])
        m = self.emit_value("tensor::where", [finite, m, self.const(0.0)])
        shifted = self.emit_value("tensor::exp", [self.emit_value("tensor::sub", [a, m])])
        total = self.emit_value("tensor::sum", [shifted, axis, keepdims])
        if not keepdims.constant:
            m = self.emit_value("tensor::squeeze", [m, axis])
        return self.emit_value("tensor::add", [self.emit_value("tensor::log", [total]), m])

    def numpy_logaddexp(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.logaddexp(a, b) as numpy computes it: ``a + log(2)`` where ``a == b`` (so that two
        infinities of one sign give that infinity; written ``a / 2 + b / 2 + log(2)``, whose
        gradient is the true one there, half to each side), else
        ``max + log1p(exp(-|a - b|))``."""
        a, b = self.numpy_args(node, "np.logaddexp", ["x1", "x2"], 2)
        if not any(isinstance(v.type, TensorType) for v in (a, b)):  # numbers: numpy's dtype
            a, b = self.ufunc_result(a), self.ufunc_result(b)
        same = self.emit_value("tensor::eq", [a, b])
        half = [self.emit_value("tensor::mul", [v, self.const(0.5)]) for v in (a, b)]
        mean = self.emit_value("tensor::add", half)
        twice = self.emit_value("tensor::add", [mean, self.const(float(np.log(2.0)))])
        # where a == b the other branch is not taken, but its gradient is multiplied by zero:
        # its operands there are zeros, so that -inf - -inf cannot make that gradient a nan
        a, b = (self.emit_value("tensor::where", [same, self.emit_value(
            "tensor::zeros_like", [v, self.const(None)]), v])
            if isinstance(v.type, TensorType) else v for v in (a, b))
        gap = self.emit_value("tensor::abs", [self.emit_value("tensor::sub", [a, b])])
        tail = self.emit_value("tensor::log1p", [self.emit_value(
            "tensor::exp", [self.emit_value("tensor::neg", [gap])])])
        apart = self.emit_value("tensor::add", [self.emit_value("tensor::maximum", [a, b]), tail])
        return self.emit("tensor::where", [same, twice, apart], attrs={UFUNC_ATTR: True}).output

    def numpy_isclass(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.isnan / np.isinf / np.isfinite: ``x != x``, ``|x| == inf``, ``|x| < inf`` (a nan
        is neither infinite nor finite), elementwise; of a number, numpy's bool scalar."""
        display = ast.unparse(node.func)
        (x,) = self.numpy_args(node, display, ["x"], 1)
        x = self.ufunc_result(x)
        if not isinstance(x.type, TensorType):
            raise self.error(node.args[0], f"{display}() of a {x.type}: pass an array or a "
                             "number")
        kind = display.rsplit(".", 1)[-1]
        if kind == "isnan":
            return self.emit_value("tensor::ne", [x, x])
        size = self.emit_value("tensor::abs", [x])
        return self.emit_value("tensor::eq" if kind == "isinf" else "tensor::lt",
                               [size, self.const(float("inf"))])

    def numpy_isscalar(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.isscalar(x): True for a number or a string; for an array, whether it has no axes
        (an item read from an array, ``x[0]``, is numpy's scalar; a 0-d array built by
        ``np.array(3.0)`` would be False in numpy)."""
        (x,) = self.numpy_args(node, "np.isscalar", ["element"], 1)
        if isinstance(x.type, TensorType):
            return self.is_0d(x, node)
        return self.const(x.type in (INT, FLOAT, BOOL, STR))

    def numpy_atleast(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.atleast_1d(x) / np.atleast_2d(x) of one array or number: ``x`` with leading axes
        of size 1 added up to that many axes (a view)."""
        display = ast.unparse(node.func)
        want = 1 if display.endswith("1d") else 2
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{display}() takes one array here")
        x = self.ufunc_result(self.expr(node.args[0]))
        if not isinstance(x.type, TensorType):
            raise self.error(node.args[0], f"{display}() of a {x.type}: pass an array")
        result = x
        ndim = self.emit_value("tensor::ndim", [x])
        name = f"$atleast_{id(node)}"
        for rank in range(want):  # an if per rank below `want`; all but one fold away
            def grow(r: int = rank, v: Any = result) -> None:
                self.frame.set(name, self.emit_value(
                    "tensor::reshape", [v, self.const((1,) * (want - r) + (-1,) * min(r, 1))]))
            is_rank = self.binary("==", ndim, self.const(rank), node)
            previous = result
            self.emit_if(is_rank, grow, lambda p=previous: self.frame.set(name, p),
                         end_of(node), node)
            result = self.frame.find(name)
            del self.frame.vars[name]
        return result

    def numpy_size(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.size(a, axis=None): the number of elements, or the size of one axis; of a list,
        its length along axis 0."""
        a, axis = self.numpy_args(node, "np.size", ["a", "axis"], 1)
        whole = axis is None or axis.is_constant and axis.constant is None
        if isinstance(a.type, ListType) and (
                axis is not None and axis.is_constant and axis.constant == 0
                or whole and a.type.element in (INT, FLOAT, BOOL)):
            return self.emit_value("prim::len", [a])
        if not isinstance(a.type, TensorType):
            raise self.error(node, f"np.size() of a {a.type}: pass an array")
        if whole:
            return self.emit_value("tensor::numel", [a])
        return self.emit_value("tensor::size", [a, axis])

    # -- np.outer ----------------------------------------------------------------------------------
    def numpy_outer(self: FunctionCompiler, node: ast.Call) -> Any:
        """numpy.outer(a, b): the column ``a.reshape(-1, 1)`` times the row ``b.reshape(1, -1)``,
        a product with an inner size of 1 (each element one multiplication, the values of
        numpy's broadcast product), which runs as BLAS's outer product."""
        a, b = self.numpy_args(node, "np.outer", ["a", "b"], 2)
        columns = []
        for v, shape in ((a, (-1, 1)), (b, (1, -1))):
            if not isinstance(v.type, TensorType):
                raise self.error(node, f"np.outer() of a {v.type} is not supported (pass arrays)")
            columns.append(self.emit_value("tensor::reshape", [v, self.const(shape)]))
        return self.emit_value("tensor::matmul", columns)

    def numpy_split(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.split(ary, indices_or_sections, axis): for a count, the list of
        ``tensor::split``'s pieces when it is a constant, ``tensor::split_list`` when it is an
        argument (a number of heads: a split once the specialization binds it); for a tuple or
        list of indices, the slices between them (``ary[:i]``, ``ary[i:j]``, ``ary[j:]`` along
        ``axis``), one more piece than indices."""
        names = ["ary", "indices_or_sections", "axis"]
        given = dict(zip(names, node.args)) | {kw.arg: kw.value for kw in node.keywords}
        if len(node.args) > 3 or set(given) - set(names) or {"ary", "indices_or_sections"} - \
                set(given):
            raise self.error(node, "np.split() takes an array, a count or a tuple of indices, "
                             "and an axis: np.split(ary, indices_or_sections, axis=0)")
        a = self.expr(given["ary"])
        if not isinstance(a.type, TensorType):
            raise self.error(node, f"np.split() of a {a.type}: pass an array")
        axis = self.as_index(self.expr(given["axis"])) if "axis" in given else self.const(0)
        sections = self.expr(given["indices_or_sections"])
        if isinstance(sections.type, (TupleType, ListType)):
            return self.split_at(node, a, sections, axis)
        inputs = [a, self.as_index(sections), axis]
        if not inputs[1].is_constant:
            return self.emit_value("tensor::split_list", inputs)
        return self.emit_value("prim::ListConstruct", self.emit("tensor::split", inputs).outputs)

    def split_at(self: FunctionCompiler, node: ast.Call, a: Any, indices: Any, axis: Any) -> Any:
        """np.split at a tuple or list of indices: the list of the slices between them."""
        if indices.is_constant:
            bounds = [self.const(int(i)) for i in indices.constant]
        elif isinstance(indices.type, TupleType):
            bounds = [self.as_index(v) for v in self.tuple_items(indices)]
        elif indices.node.kind == "prim::ListConstruct" and not indices.uses and \
                indices.node.owner is self.graph.insert_point.owner:
            # a literal nothing changed, made in this block: a change later in the block comes
            # after the split (one in a loop around the split would come before its next trip)
            bounds = [self.as_index(v) for v in indices.node.inputs]
        else:
            raise self.error(node, "np.split() at a list of indices built or changed before "
                             "the split, or made outside a loop around it, is not supported: "
                             "pass a tuple or a list literal of indices")
        if not all(b.type == INT for b in bounds):
            raise self.error(node, "np.split() needs int indices")
        starts = [self.const(None), *bounds]
        stops = [*bounds, self.const(None)]
        pieces = [self.emit_value("tensor::slice", [a, axis, start, stop, self.const(None)])
                  for start, stop in zip(starts, stops)]
        return self.emit_value("prim::ListConstruct", pieces)

    def numpy_where(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.where(cond, a, b); the one-argument form (the indices where cond holds) is refused:
        its size depends on the values."""
        if len(node.args) == 1 and not node.keywords:
            raise self.error(node, "np.where(cond) with one argument (the indices where cond "
                             "holds) is not supported: its size depends on the values; write "
                             "np.where(cond, a, b)")
        return self.call_op(op_def("tensor::where"), node, display="np.where")

    # -- np.array ----------------------------------------------------------------------------------
    def numpy_array(self: FunctionCompiler, node: ast.Call) -> Any:
        """numpy.array: a copy of an array, a stack of a list of arrays, else ``tensor::array``
        of numbers and (nested) lists of numbers."""
        given = dict(zip(["object", "dtype"], node.args)) | {kw.arg: kw.value
                                                             for kw in node.keywords}
        if len(node.args) > 2 or set(given) - {"object", "dtype"} or "object" not in given:
            raise self.error(node, "np.array() takes an object and a dtype here (copy, order "
                             "and ndmin are not supported)")
        data = self.expr(given["object"])
        dtype = self.dtype_value(given["dtype"]) if "dtype" in given else self.const(None)
        return self.array_of(node, data, dtype)

    def array_of(self: FunctionCompiler, node: ast.Call, data: Any, dtype: Any) -> Any:
        """``np.array(data, dtype)`` of an evaluated ``data``."""
        t = data.type
        arrays = isinstance(t, TensorType) or (
            isinstance(t, ListType) and isinstance(t.element, TensorType)) or (
            isinstance(t, TupleType) and t.elements
            and all(isinstance(e, TensorType) for e in t.elements))
        if not arrays:
            if _holds_arrays(t):
                raise self.error(node, f"np.array() of a {t} (arrays in nested lists or tuples) "
                                 "is not supported: stack the inner lists first, "
                                 "np.stack([np.stack(row) for row in rows])")
            if t == STR or (array_rank(data) is None and not isinstance(t, ListType)):
                raise self.error(node, f"np.array() of a {t} is not supported (pass a number, "
                                 "an array, or lists of numbers)")
            return self.emit_value("tensor::array", [data, dtype])
        kind = "tensor::copy" if isinstance(t, TensorType) else "tensor::stack"
        out = self.emit_value(kind, [data] if kind == "tensor::copy" else [data, self.const(0)])
        if dtype.is_constant and dtype.constant is None:
            return out
        return self.emit_value("tensor::astype", [out, dtype])


    def numpy_asarray(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.asarray(a, dtype) and np.ascontiguousarray(a, dtype): an array argument itself
        (``tensor::contiguous`` for ascontiguousarray: a view, as numpy returns ``a`` when it
        is already contiguous; a 0-d array becomes (1,)), cast when ``dtype`` differs from its
        own; numbers and lists as ``np.array`` makes them."""
        display = ast.unparse(node.func)
        given = dict(zip(["a", "dtype"], node.args)) | {kw.arg: kw.value for kw in node.keywords}
        if len(node.args) > 2 or set(given) - {"a", "dtype"} or "a" not in given:
            raise self.error(node, f"{display}() takes an array and a dtype here (order and "
                             "like are not supported)")
        data = self.expr(given["a"])
        dtype = self.dtype_value(given["dtype"]) if "dtype" in given else self.const(None)
        contiguous = self.resolve_static(node.func) is np.ascontiguousarray
        t = data.type
        if not isinstance(t, TensorType):
            data = self.array_of(node, data, dtype)
            return self.emit_value("tensor::contiguous", [data]) if contiguous else data
        if contiguous:
            data = self.emit_value("tensor::contiguous", [data])
        elif t.rank in (None, 0):
            pending: list[Any] = []  # (a value a loop carries may be an array in a later step)
            if made_as_scalar(data, pending, self.updated_from) and not pending:
                data = self.array_of_scalar(data, node)  # numpy's scalar where 0-d
        if dtype.is_constant and dtype.constant is None:
            return data
        return self.cast_unless_same(data, dtype, node)

    def array_of_scalar(self: FunctionCompiler, data: Any, node: ast.AST) -> Any:
        """``np.asarray(data)`` of a value that is numpy's scalar where it is 0-d: a new 0-d
        array there, ``data`` itself where it has axes."""
        def copy() -> Any:
            made = self.emit_value("tensor::copy", [data])
            made.node.attrs[ZERO_D_ARRAY] = True
            return made

        if data.type.rank == 0:
            return copy()
        name = f"$asarray_{id(node)}"
        zero_d = self.is_0d(data, node)
        self.emit_if(zero_d, lambda: self.frame.set(name, copy()),
                     lambda: self.frame.set(name, data), end_of(node), node)
        made = self.frame.find(name)
        del self.frame.vars[name]
        self.array_aliases[made] = data  # (data's array where it has axes)
        self.zero_d_copies.add(made)
        return made

    def numpy_eye(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.eye(N, M=None, k=0, dtype=float): ones where the column is the row plus ``k``
        (``arange(N)[:, None] + k == arange(M)``), in ``dtype``; np.tri(N, M=None, k=0,
        dtype=float): ones at and below that diagonal (``>=``)."""
        name = self.resolve_static(node.func).__name__
        given = dict(zip(["N", "M", "k", "dtype"], node.args)) | {kw.arg: kw.value
                                                                   for kw in node.keywords}
        if len(node.args) > 4 or set(given) - {"N", "M", "k", "dtype"} or "N" not in given:
            raise self.error(node, f"np.{name}() takes N, M, k and dtype here (order and like "
                             "are not supported)")
        sizes = []
        for arg in ("N", "M", "k"):
            value = self.as_index(self.expr(given[arg])) if arg in given else None
            if value is not None and value.type not in (INT, BOOL) and not (
                    arg == "M" and value.type == NONE):
                raise self.error(given[arg], f"np.{name}() argument '{arg}' must be an int, "
                                 f"not {value.type}")
            sizes.append(value)
        n, m, k = sizes
        if m is None or m.type == NONE:
            m = n
        dtype = self.dtype_value(given["dtype"]) if "dtype" in given else self.const("float64")
        mask = self.diagonal_mask(n, m, k, "tensor::eq" if name == "eye" else "tensor::ge")
        if dtype.is_constant and dtype.constant is None:
            dtype = self.const("float64")
        return self.emit_value("tensor::astype", [mask, dtype])

    def diagonal_mask(self: FunctionCompiler, n: Any, m: Any, k: Any, compare: str) -> Any:
        """The (n, m) bool array ``compare(row + k, column)``."""
        none = self.const(None)
        rows = self.emit_value("tensor::arange", [n, none, self.const(1), self.const("int64")])
        rows = self.emit_value("tensor::reshape", [rows, self.const((-1, 1))])
        if k is not None:
            rows = self.emit_value("tensor::add", [rows, k])
        cols = self.emit_value("tensor::arange", [m, none, self.const(1), self.const("int64")])
        return self.emit_value(compare, [rows, cols])

    def numpy_triangle(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.tril(m, k=0) / np.triu(m, k=0), as numpy writes them: ``np.where`` of the mask
        ``np.tri(*m.shape[-2:], k)`` (``k - 1`` for triu) over the last two axes (a 1-D ``m``
        is the rows of a square), zeros of ``m``'s dtype elsewhere."""
        name = self.resolve_static(node.func).__name__
        a, k = self.numpy_args(node, f"np.{name}", ["m", "k"], 1)
        if not isinstance(a.type, TensorType):
            raise self.error(node.args[0], f"np.{name}() of a {a.type}: pass an array")
        k = self.as_index(k) if k is not None else self.const(0)
        if k.type not in (INT, BOOL):
            raise self.error(node, f"np.{name}() argument 'k' must be an int, not {k.type}")
        if name == "triu":
            k = self.binary("-", k, self.const(1), node)
        cols = self.emit_value("tensor::size", [a, self.const(-1)])
        var = f"$rows_{id(node)}"
        ndim = self.emit_value("tensor::ndim", [a])
        self.emit_if(self.binary("==", ndim, self.const(1), node),
                     lambda: self.frame.set(var, cols),
                     lambda: self.frame.set(var, self.emit_value(
                         "tensor::size", [a, self.const(-2)])), end_of(node), node)
        rows = self.frame.find(var)
        del self.frame.vars[var]
        mask = self.diagonal_mask(rows, cols, k, "tensor::ge")
        zeros = self.emit_value("tensor::zeros_like", [a, self.const(None)])
        kept = (a, zeros) if name == "tril" else (zeros, a)
        return self.emit_value("tensor::where", [mask, *kept])

    # -- integer-array indexing --------------------------------------------------------------
    def integer_array_index(self: FunctionCompiler, value: Any, items: list[ast.expr]) -> Any:
        """``a[idx]``, ``a[:, ..., :, idx]`` (full slices before one index) and ``a[rows, cols]``
        where an index may be an integer array: ``tensor::take`` / ``tensor::index_pairs``; the
        same subscripts of ints are selects. None for any other subscript (basic indexing)."""
        while len(items) > 1 and _is_full_slice(items[-1]):
            items = items[:-1]  # trailing ':' keep their axes either way
        leading = 0
        while leading < len(items) and _is_full_slice(items[leading]):
            leading += 1
        indices = items[leading:]
        if not indices or any(isinstance(i, ast.Slice) or _is_ellipsis_or_none(i)
                              for i in indices):
            return None
        if len(indices) > (1 if leading else 2):
            return None
        values = [self.index_item(i) for i in indices]
        for item, v in zip(indices, values):
            if v.type not in (INT, BOOL) and not isinstance(v.type, TensorType):
                raise self.error(item, f"an index must be an int or an integer array, not "
                                 f"{v.type}")
        if all(v.type in (INT, BOOL) or _integer_scalar(v) for v in values):
            for v in values:  # each select drops its axis: the next index is at the same one
                if v.type not in (INT, BOOL):  # numpy's integer scalar (idx[0], np.argmax(s)):
                    v = self.emit_value("prim::Int", [v])  # basic indexing, a view as numpy's
                value = self.emit_value("tensor::select", [value, self.const(leading), v])
            return value
        if len(values) == 1:
            return self.emit_value("tensor::take", [value, values[0], self.const(leading)])
        return self.emit_value("tensor::index_pairs", [value, *values])

    def index_item(self: FunctionCompiler, node: ast.expr) -> Any:
        """One item of an integer-array subscript: ``range(...)`` is ``np.arange(...)`` there (a
        sequence of ints numpy reads as an integer array), anything else ``index_array``."""
        if isinstance(node, ast.Call) and self.resolve_static(node.func) is range:
            if node.keywords or not 1 <= len(node.args) <= 3:
                raise self.error(node, "range() takes 1 to 3 positional arguments")
            bounds = [self.as_index(self.expr(arg)) for arg in node.args]
            for arg, value in zip(node.args, bounds):
                if value.type not in (INT, BOOL):
                    raise self.error(arg, f"range() arguments must be ints, not {value.type}")
            defaults = [self.const(None), self.const(1)][len(bounds) - 1:]
            return self.emit_value("tensor::arange", [*bounds, *defaults, self.const(None)])
        return self.index_array(self.index_once(node))

    def index_array(self: FunctionCompiler, value: Any) -> Any:
        """An index value as numpy reads it: a list of ints is an integer array (``o[rows, y]``
        with ``y: List[int]``); anything else as it is."""
        t = value.type
        if isinstance(t, ListType) and t.element == INT:
            return self.emit_value("tensor::array", [value, self.const(None)])
        return value

    def emit_source(self: FunctionCompiler, code: str, node: ast.AST) -> None:
        """Compile the statements ``code`` (which may name the compiler's ``$`` variables) as
        if written at ``node``: a construct written as the Python that means it."""
        for stmt in ast.parse(code.replace("$", "_S_")).body:
            stmt = _Dollars().visit(stmt)
            ast.fix_missing_locations(at_position(stmt, node))
            self.visit(stmt)

class _Dollars(ast.NodeTransformer):
    """Give back the ``$`` of compiler-made names (not valid in parsed Python source)."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = node.id.replace("_S_", "$")
        return node


def _is_full_slice(node: ast.expr) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and \
        node.step is None


def _is_ellipsis_or_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and (node.value is Ellipsis or node.value is None)


def _holds_arrays(t: Any) -> bool:
    """Whether a list or tuple type holds arrays below its items (``List[List[Tensor]]``)."""
    if isinstance(t, ListType):
        return _holds_arrays(t.element) or isinstance(t.element, TensorType)
    if isinstance(t, TupleType):
        return any(_holds_arrays(e) or isinstance(e, TensorType) for e in t.elements)
    return False


def _integer_scalar(v: Any) -> bool:
    """Whether ``v`` is a 0-d integer array: numpy's integer scalar, which indexes as an int
    (``W[idx[0]]`` is a view of ``W``, not a copy)."""
    t = v.type
    return isinstance(t, TensorType) and t.shape == () and t.dtype in INT_DTYPES
