"""Python spellings of ops in generated code: the numpy backend's table of ``tensor::`` ops with a
direct numpy/Python spelling (the rest call ``ops.NAME``) and the ``prim::`` structure ops' table.

The code generator writes from them; ``slot_writes`` asks which kinds are plain numpy expressions
(their results are fresh arrays).
"""

from __future__ import annotations

import ast
from collections.abc import Callable


def _lead(axis: str) -> str | None:
    """The ``:, `` prefix that indexes along ``axis`` when it is a literal axis from the left
    (``0``: none, ``2``: two); None for anything else (a negative axis, a name)."""
    return ":, " * int(axis) if axis.isdigit() and int(axis) < 32 else None


def _bound(code: str) -> str:
    """A slice bound as written between colons (None: nothing)."""
    return "" if code == "None" else code


# numpy backend: ops with a direct numpy/Python spelling (the rest call ``ops.NAME``).
NUMPY_CODE: dict[str, Callable[..., str]] = {
    "tensor::add": lambda a, b: f"{a} + {b}",
    "tensor::sub": lambda a, b: f"{a} - {b}",
    "tensor::mul": lambda a, b: f"{a} * {b}",
    "tensor::div": lambda a, b: f"{a} / {b}",
    "tensor::floordiv": lambda a, b: f"{a} // {b}",
    "tensor::mod": lambda a, b: f"{a} % {b}",
    "tensor::pow": lambda a, b: f"{a} ** {b}",
    "tensor::neg": lambda a: f"-{a}",
    "tensor::detach": lambda a: a,  # the array itself: only differentiation sees it
    "tensor::eq": lambda a, b: f"{a} == {b}",
    "tensor::ne": lambda a, b: f"{a} != {b}",
    "tensor::lt": lambda a, b: f"{a} < {b}",
    "tensor::le": lambda a, b: f"{a} <= {b}",
    "tensor::gt": lambda a, b: f"{a} > {b}",
    "tensor::ge": lambda a, b: f"{a} >= {b}",
    "tensor::matmul": lambda a, b: f"{a} @ {b}",
    **{f"tensor::{name}": (lambda name: lambda a: f"np.{name}({a})")(name)
       for name in ("tanh", "exp", "log", "log1p", "expm1", "sqrt", "abs", "sign", "square", "sin",
                    "cos", "floor", "ceil", "exp2", "log2", "log10", "tan", "arcsin", "arccos",
                    "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh")},
    "tensor::minimum": lambda a, b: f"np.minimum({a}, {b})",
    "tensor::maximum": lambda a, b: f"np.maximum({a}, {b})",
    # along a constant axis (a per-step slice of a sequence) plain indexing saves a call
    "tensor::select": lambda a, axis, i: f"{a}[{_lead(axis)}{i}]" if _lead(axis) is not None
    else f"ops.select({a}, {axis}, {i})",
    "tensor::slice": lambda a, axis, start="None", stop="None", step="None":
    f"{a}[{_lead(axis)}{_bound(start)}:{_bound(stop)}:{_bound(step)}]" if _lead(axis) is not None
    else f"ops.slice({a}, {axis}, {start}, {stop}, {step})",
    "tensor::take": lambda a, idx, axis="0": f"{a}[{_lead(axis)}{idx}]"
    if _lead(axis) is not None else f"ops.take({a}, {idx}, {axis})",
    "tensor::reshape": lambda a, shape: f"{a}.reshape({shape})",
    "tensor::empty": lambda shape, dtype="'float64'": f"np.empty({shape}, {dtype})",
    "tensor::flatten": lambda a: f"{a}.flatten()",
    "tensor::argmax": lambda a, axis="None": f"np.argmax({a}, {axis})",
    "tensor::argmin": lambda a, axis="None": f"np.argmin({a}, {axis})",
    # `x.T` (every axis reversed) is an attribute read, not a call
    "tensor::transpose": lambda a, axes="None": f"{a}.T" if axes == "None" else
    f"ops.transpose({a}, {axes})",
    "tensor::cat": lambda tensors, axis="0": f"np.concatenate({tensors}, {axis})",
    # a write in place whose old array nothing reads again: one __setitem__, the array itself
    "tensor::select_put_": lambda a, v, axis, i: f"({a}.__setitem__({i}, {v}) or {a})"
    if axis == "0" else f"({a}.__setitem__(({'slice(None), ' * int(axis)}{i}), {v}) or {a})"
    if _lead(axis) is not None else f"ops.select_put_({a}, {v}, {axis}, {i})",
    "tensor::write_slot": lambda buf, axis, i, v: f"{buf}[{_lead(axis)}{i}] = {v}"
    if _lead(axis) is not None else f"ops.write_slot({buf}, {axis}, {i}, {v})",
}

def _attribute(code: str) -> str:
    """The function name a constant ``str`` input spells (``'sqrt'`` in the code: ``sqrt``)."""
    name = ast.literal_eval(code)
    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"not a function name: {code}")
    return name


# structure ops: Python spellings of prim:: kinds (statements have no result).
PRIM_CODE: dict[str, Callable[..., str]] = {
    "prim::TupleConstruct": lambda *xs: f"({', '.join(xs)}{',' if len(xs) == 1 else ''})",
    "prim::TupleIndex": lambda t, i: f"{t}[{i}]",
    "prim::TupleSlice": lambda t, a, b, c: f"{t}[{a}:{b}:{c}]",
    "prim::ListConstruct": lambda *xs: f"[{', '.join(xs)}]",
    "prim::ShapeConstruct": lambda *xs: f"({', '.join(xs)}{',' if len(xs) == 1 else ''})",
    "prim::ListIndex": lambda lst, i: f"{lst}[{i}]",
    "prim::ListSetItem": lambda lst, i, v: f"{lst}[{i}] = {v}",
    "prim::ListAppend": lambda lst, v: f"{lst}.append({v})",
    "prim::ListExtend": lambda lst, o: f"{lst}.extend({o})",
    "prim::ListPop": lambda lst, i="-1": f"{lst}.pop({i})",
    "prim::ListInsert": lambda lst, i, v: f"{lst}.insert({i}, {v})",
    "prim::ListSlice": lambda lst, a, b, c: f"{lst}[{a}:{b}:{c}]",
    "prim::ListAdd": lambda a, b: f"{a} + {b}",
    "prim::ListMul": lambda a, n: f"{a} * {n}",
    "prim::ListColumn": lambda lst, k: f"[_item[{k}] for _item in {lst}]",
    "prim::str_eq": lambda a, b: f"{a} == {b}",
    "prim::str_op": lambda name, s, *args: f"getattr({s}, {name})({', '.join(args)})",
    "prim::str_slice": lambda s, a, b, c: f"{s}[{a}:{b}:{c}]",
    "prim::ListContains": lambda lst, v: f"{v} in {lst}",
    "prim::len": lambda x: f"len({x})",
    "prim::DictGetItem": lambda d, k: f"{d}[{k}]",
    "prim::unchecked_unwrap_optional": lambda x: x,
    "prim::Uninitialized": lambda: "None",
    "prim::Bool": lambda x: f"bool({x})",
    "prim::Int": lambda x: f"int({x})",
    "prim::Float": lambda x: f"float({x})",
    "prim::item": lambda x: f"{x}.item()",
    "prim::IsNone": lambda x: f"{x} is None",
    "prim::min": lambda a, b: f"min({a}, {b})",
    "prim::sorted": lambda items, keys, reverse: f"sorted({items}, reverse={reverse})"
    if keys == "None" else f"[{items}[_sort_k] for _sort_k in sorted(range(len({items})), "
    f"key={keys}.__getitem__, reverse={reverse})]",
    "prim::max": lambda a, b: f"max({a}, {b})",
    "prim::abs": lambda x: f"abs({x})",
    "prim::math": lambda name, *xs: f"math.{_attribute(name)}({', '.join(xs)})",
    "prim::random": lambda name, *xs: f"np.random.{_attribute(name)}({', '.join(xs)})",
    "prim::Print": lambda *xs: f"print({', '.join(xs)})",
    "prim::DictConstruct": lambda *xs: "{" + ", ".join(
        f"{k}: {v}" for k, v in zip(xs[0::2], xs[1::2])) + "}",
    "prim::DictSetItem": lambda d, k, v: f"{d}[{k}] = {v}",
    "prim::DictContains": lambda d, k: f"{k} in {d}",
    "prim::DictGet": lambda d, k, default: f"{d}.get({k}, {default})",
    "prim::DictKeys": lambda d: f"list({d})",
    "prim::DictValues": lambda d: f"list({d}.values())",
    "prim::DictItems": lambda d: f"list({d}.items())",
}
