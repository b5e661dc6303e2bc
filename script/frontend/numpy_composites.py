"""numpy functions written as the ops numpy's own Python computes them with: ``np.isclose`` and
``np.allclose`` (numpy's tolerance test), ``np.identity`` (``np.eye``), ``np.trace`` (the sum
of a diagonal), ``np.diff`` (differences of neighbours), ``np.linspace`` (numpy's formula:
steps from ``start``, the last one ``stop``), and ``np.tensordot`` / ``np.inner`` (the
``tensor::tensordot`` op, its axes a constant). Gradients flow through the ops they are written
as.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.registry import NOT_CONSTANT, constant_of
from ir.types import BOOL, FLOAT, INT, TensorType
from script.frontend.env import end_of
from script.frontend.numpy_shims import SHIMS

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def _is_number(value: Any) -> bool:
    return value.type in (INT, FLOAT, BOOL)


class CompositesMixin:
    """numpy functions of ``FunctionCompiler`` (see the module docstring)."""

    def numpy_isclose(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False): ``a == b`` (equal
        infinities) or, where ``b`` is finite, ``|a - b| <= atol + rtol * |b|`` computed in
        ``b``'s float dtype, as numpy does; NaNs equal where ``equal_nan``."""
        a, b, rtol, atol, equal_nan = self.numpy_args(
            node, "np.isclose", ["a", "b", "rtol", "atol", "equal_nan"], 2)
        return self.closeness(node, a, b, rtol, atol, equal_nan)

    def closeness(self: FunctionCompiler, node: ast.Call, a: Any, b: Any, rtol: Any, atol: Any,
                  equal_nan: Any) -> Any:
        for name, v in (("a", a), ("b", b)):
            if not (isinstance(v.type, TensorType) or _is_number(v)):
                raise self.error(node, f"np.isclose() argument '{name}' must be an array or a "
                                 f"number, not {v.type}")
        rtol = rtol if rtol is not None else self.const(1e-05)
        atol = atol if atol is not None else self.const(1e-08)
        both_numbers = _is_number(a) and _is_number(b)
        a, b = self.ufunc_result(a), self.ufunc_result(b)
        y = self.emit_value("tensor::add", [b, self.const(0.0)])  # numpy's float y
        gap = self.emit_value("tensor::abs", [self.emit_value("tensor::sub", [a, y])])
        bound = self.emit_value("tensor::add", [atol, self.emit_value(
            "tensor::mul", [rtol, self.emit_value("tensor::abs", [y])])])
        finite = self.emit_value("tensor::lt", [self.emit_value("tensor::abs", [y]),
                                                self.const(float("inf"))])
        near = self.emit_value("tensor::logical_and", [
            finite, self.emit_value("tensor::le", [gap, bound])])
        result = self.emit_value("tensor::logical_or", [
            self.emit_value("tensor::eq", [a, y]), near])
        if equal_nan is not None and constant_of(equal_nan) is not False:
            nans = self.emit_value("tensor::logical_and", [
                self.emit_value("tensor::ne", [a, a]), self.emit_value("tensor::ne", [y, y])])
            both = self.emit_value("tensor::logical_or", [result, nans])
            result = self.emit_value("tensor::where", [equal_nan, both, result])
        return result if not both_numbers else self.ufunc_result(result)

    def numpy_allclose(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.allclose(a, b, rtol, atol, equal_nan): ``bool(np.all(np.isclose(...)))``, a
        Python bool as numpy's."""
        a, b, rtol, atol, equal_nan = self.numpy_args(
            node, "np.allclose", ["a", "b", "rtol", "atol", "equal_nan"], 2)
        close = self.ufunc_result(self.closeness(node, a, b, rtol, atol, equal_nan))
        every = self.emit_value("tensor::all", [close, self.const(None), self.const(False)])
        return self.emit_value("prim::Bool", [every])

    def numpy_identity(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.identity(n, dtype=float): ``np.eye(n, dtype=dtype)``."""
        given = dict(zip(["n", "dtype"], node.args)) | {kw.arg: kw.value for kw in node.keywords}
        if len(node.args) > 2 or set(given) - {"n", "dtype"} or "n" not in given:
            raise self.error(node, "np.identity() takes n and dtype here")
        n = self.as_index(self.expr(given["n"]))
        if n.type not in (INT, BOOL):
            raise self.error(given["n"], f"np.identity() n must be an int, not {n.type}")
        dtype = self.dtype_value(given["dtype"]) if "dtype" in given else self.const(None)
        if dtype.is_constant and dtype.constant is None:
            dtype = self.const("float64")
        mask = self.diagonal_mask(n, n, self.const(0), "tensor::eq")
        return self.emit_value("tensor::astype", [mask, dtype])

    def numpy_trace(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.trace(a, offset=0) of a matrix: the sum of its diagonal ``offset`` (``np.diag``'s
        gather; numpy's sum's dtype: integers add up in int64)."""
        a, offset = self.numpy_args(node, "np.trace", ["a", "offset"], 1)
        if not isinstance(a.type, TensorType) or a.type.rank not in (None, 2):
            raise self.error(node, f"np.trace() of a {a.type} is not supported (of a matrix "
                             "it is)")
        offset = self.as_index(offset) if offset is not None else self.const(0)
        if offset.type not in (INT, BOOL):
            raise self.error(node, f"np.trace() offset must be an int, not {offset.type}")
        if a.type.rank is None:  # decided when specializing: a matrix, or refused then
            matrix = self.binary("==", self.emit_value("tensor::ndim", [a]), self.const(2), node)
            self.emit_if(matrix, lambda: None, lambda: self.raise_exception(
                "np.trace() is supported of a matrix only here", "ValueError"),
                end_of(node), node)
        diagonal = self.diagonal_of(a, offset, node)  # summed as numpy sums it, in order
        return self.emit_value("tensor::sum", [diagonal, self.const(None), self.const(False)])

    def numpy_diff(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.diff(a, n=1, axis=-1): ``a[1:] - a[:-1]`` along ``axis``, ``n`` times (``n`` a
        constant)."""
        a, n, axis = self.numpy_args(node, "np.diff", ["a", "n", "axis"], 1)
        if not isinstance(a.type, TensorType):
            raise self.error(node, f"np.diff() of a {a.type}: pass an array")
        count = 1 if n is None else constant_of(n)
        along = -1 if axis is None else constant_of(axis)
        if type(count) is not int or count < 0 or type(along) is not int:
            raise self.error(node, "np.diff() takes a constant int n >= 0 and axis here")
        none, step = self.const(None), self.const(1)
        for _ in range(count):
            later = self.emit_value("tensor::slice", [a, self.const(along), step, none, none])
            earlier = self.emit_value("tensor::slice", [a, self.const(along), none,
                                                        self.const(-1), none])
            a = self.neighbour_difference(later, earlier, node)
        return a

    def neighbour_difference(self: FunctionCompiler, later: Any, earlier: Any,
                             node: ast.Call) -> Any:
        """``later - earlier``, or ``later != earlier`` of bools (numpy's diff; numpy refuses
        to subtract bools), decided when specializing where the dtype is not known yet."""
        dtype = later.type.dtype
        if dtype is not None:
            kind = "tensor::ne" if dtype == "bool" else "tensor::sub"
            return self.emit_value(kind, [later, earlier])
        name = f"$diff_{id(node)}"
        bools = self.binary("==", self.emit_value("tensor::dtype", [later]),
                            self.const("bool"), node)
        self.emit_if(bools, lambda: self.frame.set(name, self.emit_value(
            "tensor::ne", [later, earlier])), lambda: self.frame.set(name, self.emit_value(
                "tensor::sub", [later, earlier])), end_of(node), node)
        result = self.frame.find(name)
        del self.frame.vars[name]
        return result

    def numpy_linspace(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0)
        of numbers, as numpy computes it: ``arange(num) * step + start`` with ``step = (stop -
        start) / div`` (``div`` is ``num - 1`` with the endpoint, else ``num``; where the step
        underflows to 0, ``arange(num) / div * (stop - start)``), the last value ``stop`` with
        the endpoint; an integer dtype takes the floor, as numpy's. ``retstep`` and another
        ``axis`` are refused."""
        names = ["start", "stop", "num", "endpoint", "retstep", "dtype", "axis"]
        given = dict(zip(names, node.args)) | {kw.arg: kw.value for kw in node.keywords}
        if len(node.args) > len(names) or set(given) - set(names) or \
                not {"start", "stop"} <= set(given):
            raise self.error(node, "np.linspace() takes start, stop, num, endpoint and dtype "
                             "here")
        for name, allowed in (("retstep", False), ("axis", 0)):
            if name in given and constant_of(self.expr(given[name])) is not allowed:
                raise self.error(given[name], f"np.linspace() {name} other than {allowed} is "
                                 "not supported")
        start, stop = self.expr(given["start"]), self.expr(given["stop"])
        for name, v in (("start", start), ("stop", stop)):
            if not _is_number(v):
                raise self.error(given[name], f"np.linspace() {name} must be a number here, "
                                 f"not {v.type}")
        num = self.as_index(self.expr(given["num"])) if "num" in given else self.const(50)
        if num.type not in (INT, BOOL):
            raise self.error(node, f"np.linspace() num must be an int, not {num.type}")
        endpoint = constant_of(self.expr(given["endpoint"])) if "endpoint" in given else True
        if type(endpoint) is not bool:
            raise self.error(node, "np.linspace() endpoint must be a constant bool here")
        text = self.emit_value("prim::str_op", [
            self.const("format"), self.const("Number of samples, {}, must be non-negative."),
            num])
        self.emit_if(self.binary(">=", num, self.const(0), node), lambda: None,
                     lambda: self.raise_exception(text, "ValueError"), end_of(node), node)
        div = self.emit_value("tensor::sub", [num, self.const(1)]) if endpoint else num
        div = self.emit_value("prim::max", [div, self.const(1)])  # num 1: [start] alone
        delta = self.emit_value("tensor::sub", [stop, start])
        step = self.emit_value("tensor::div", [delta, div])
        none = self.const(None)
        steps = self.emit_value("tensor::arange", [num, none, self.const(1),
                                                   self.const("float64")])
        scaled = self.emit_value("tensor::where", [
            self.emit_value("tensor::eq", [step, self.const(0)]),
            self.emit_value("tensor::mul", [self.emit_value("tensor::div", [steps, div]), delta]),
            self.emit_value("tensor::mul", [steps, step])])
        ys = self.emit_value("tensor::add", [scaled, start])
        if endpoint:
            name = f"$linspace_{id(node)}"
            more = self.binary(">", num, self.const(1), node)
            self.emit_if(more, lambda: self.frame.set(name, self.emit_value(
                "tensor::select_put", [ys, stop, self.const(0), self.const(-1)])),
                lambda: self.frame.set(name, ys), end_of(node), node)
            ys = self.frame.find(name)
            del self.frame.vars[name]
        if "dtype" in given:
            dtype = self.dtype_value(given["dtype"])
            kind = dtype.constant if dtype.is_constant else NOT_CONSTANT
            if kind is NOT_CONSTANT:
                raise self.error(given["dtype"], "np.linspace() dtype must be known when "
                                 "compiling here")
            if isinstance(kind, str) and kind.startswith(("int", "uint")):
                ys = self.emit_value("tensor::floor", [ys])
            if kind is not None:
                ys = self.emit_value("tensor::astype", [ys, dtype])
        return ys

    def numpy_tensordot(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.tensordot(a, b, axes=2): ``tensor::tensordot``, ``axes`` a constant (an int, or a
        pair of ints or of lists of ints, as written)."""
        given = dict(zip(["a", "b", "axes"], node.args)) | {kw.arg: kw.value
                                                            for kw in node.keywords}
        if len(node.args) > 3 or set(given) - {"a", "b", "axes"} or not {"a", "b"} <= set(given):
            raise self.error(node, "np.tensordot() takes a, b and axes")
        a, b = self.expr(given["a"]), self.expr(given["b"])
        axes: Any = 2
        if "axes" in given:
            try:  # a literal as written: lists of axes are not constants of the program
                axes = ast.literal_eval(given["axes"])
            except ValueError:
                axes = constant_of(self.expr(given["axes"]))
            if axes is NOT_CONSTANT:
                raise self.error(given["axes"], "np.tensordot() axes must be a constant here "
                                 "(an int, or a pair of axis lists written out)")
        axes = _frozen(axes)
        for name, v in (("a", a), ("b", b)):
            if not isinstance(v.type, TensorType):
                raise self.error(given[name], f"np.tensordot() {name} must be an array, not "
                                 f"{v.type}")
        return self.emit_value("tensor::tensordot", [a, b, self.const(axes), self.const(False)])

    def numpy_inner(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.inner(a, b): the sum of products over the last axes of both (``tensordot`` of
        axes -1 and -1); a number times anything is the product, as numpy's."""
        a, b = self.numpy_args(node, "np.inner", ["a", "b"], 2)
        if not (isinstance(a.type, TensorType) and isinstance(b.type, TensorType)):
            return self.binary("*", self.ufunc_result(a), self.ufunc_result(b), node)
        return self.emit_value("tensor::tensordot", [a, b, self.const(((-1,), (-1,))),
                                                     self.const(True)])

    def numpy_shim(self: FunctionCompiler, node: ast.Call) -> Any:
        """A numpy function written in the language (``numpy_shims``), inlined as a helper."""
        return self.call_python_function(SHIMS[self.resolve_static(node.func).__name__], node)

    def numpy_split_along(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.hsplit / np.vsplit / np.dsplit(ary, indices_or_sections): ``np.split`` along the
        second axis (the first of a 1-D array), the first, the third; numpy's ValueError for an
        array of too few axes."""
        name = self.resolve_static(node.func).__name__
        given = dict(zip(["ary", "indices_or_sections"], node.args)) | {
            kw.arg: kw.value for kw in node.keywords}
        if len(node.args) > 2 or set(given) != {"ary", "indices_or_sections"}:
            raise self.error(node, f"np.{name}() takes an array and a count or a tuple of "
                             "indices")
        a = self.expr(given["ary"])
        if not isinstance(a.type, TensorType):
            raise self.error(node, f"np.{name}() of a {a.type}: pass an array")
        least = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[name]
        enough = self.binary(">=", self.emit_value("tensor::ndim", [a]), self.const(least), node)
        self.emit_if(enough, lambda: None, lambda: self.raise_exception(
            f"{name} only works on arrays of {least} or more dimensions", "ValueError"),
            end_of(node), node)
        held = f"$split_{id(node)}"
        self.frame.set(held, a)

        def at(n: ast.AST) -> ast.AST:
            return ast.copy_location(n, node)

        axis: ast.expr = at(ast.Constant({"vsplit": 0, "dsplit": 2}.get(name, 1)))
        if name == "hsplit":  # the columns of a matrix, the items of a vector
            axis = at(ast.IfExp(at(ast.Compare(at(ast.Attribute(at(ast.Name(held, ast.Load())),
                                                              "ndim", ast.Load())),
                                               [ast.Gt()], [at(ast.Constant(1))])),
                                axis, at(ast.Constant(0))))
        call = at(ast.Call(node.func, [at(ast.Name(held, ast.Load())),
                                       given["indices_or_sections"]],
                           [ast.keyword("axis", axis)]))
        try:
            return self.numpy_split(call)
        finally:
            self.frame.vars.pop(held, None)

    def numpy_broadcast_to(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.broadcast_to(array, shape): numpy's read-only view of ``array`` (a write into
        ``array`` later shows through it, as in numpy; numpy's ValueError for a shape it cannot
        reach)."""
        a, shape = self.numpy_args(node, "np.broadcast_to", ["array", "shape"], 2)
        if not isinstance(a.type, TensorType):
            a = self.emit_value("tensor::array", [a, self.const(None)])
        return self.emit_value("tensor::broadcast_to", [a, shape])

    def numpy_slogdet(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.linalg.slogdet(a): the tuple (sign, logabsdet) (numpy's named tuple, unpacked as
        ``sign, logdet = np.linalg.slogdet(S)``; its ``.sign`` / ``.logabsdet`` are not)."""
        (a,) = self.numpy_args(node, "np.linalg.slogdet", ["a"], 1)
        if not isinstance(a.type, TensorType):
            raise self.error(node, f"np.linalg.slogdet() of a {a.type}: pass an array")
        made = self.emit("tensor::slogdet", [a])
        return self.emit_value("prim::TupleConstruct", list(made.outputs))

    def cast_unless_same(self: FunctionCompiler, data: Any, dtype: Any, node: ast.AST) -> Any:
        """``data`` itself where its dtype is ``dtype``, else cast to it (``tensor::astype``):
        numpy's ``np.asarray(a, dtype)`` and ``np.float64(a)`` return ``a`` itself, whose
        writes then show through both names. Decided when specializing where the dtype is not
        known yet."""
        t = data.type
        if dtype.is_constant and t.dtype is not None:
            if np.dtype(dtype.constant) == t.dtype:
                return data
            return self.emit_value("tensor::astype", [data, dtype])
        name = f"$cast_{id(node)}"
        same = self.binary("==", self.emit_value("tensor::dtype", [data]), dtype, node)
        self.emit_if(same, lambda: self.frame.set(name, data), lambda: self.frame.set(
            name, self.emit_value("tensor::astype", [data, dtype])), end_of(node), node)
        result = self.frame.find(name)
        del self.frame.vars[name]
        return result


def _frozen(axes: Any) -> Any:
    """``axes`` with its lists made tuples (a constant of the program)."""
    if isinstance(axes, (list, tuple)):
        return tuple(_frozen(a) for a in axes)
    return axes
