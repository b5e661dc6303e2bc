"""``export_onnx``: a model frozen and written as an ONNX file that onnxruntime (or any ONNX
runtime) runs.

The model is frozen first: compiled in eval mode, every parameter and array attribute its
``forward`` reads a constant, written as an initializer under the module's own name for it
(``weight_ih_l0`` for ``rnn.LSTM``) and in its own layout (``w.T`` is left to the ONNX graph;
runtimes fold it when they load the model). Then the graph is specialized for the example inputs
with the dynamic axes left unknown, cleaned up (numbers and shapes folded, the input projection
hoisted out of the time loop) and lowered op by op (``script.artifact.onnx_lower``,
``onnx_ops``). Loops stay loops: an ONNX ``Loop`` whose body is the cell, so the file runs at any
sequence length and batch size.
Arguments passed as None or as Python numbers are fixed at their example values; the ONNX graph's
inputs are the array arguments in order (a tuple of arrays gives one input per array,
``hx_0``, ``hx_1``), its outputs the model's outputs flattened depth-first (``output_0``, ...).

Whatever cannot be expressed is a ``ScriptError`` at the op's source line, raised before a file
is written; a written model passes ``onnx.checker.check_model(full_check=True)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ir.core import Graph
from ir.types import FLOAT, ClassType, TensorType, TupleType, Type
from passes import CLEANUP_PIPELINE
from passes.constant_prop import fold_limit
from passes.shape_prop import specialize
from script._version import __version__
from script.artifact.freeze import (
    StandaloneModule,
    _eval_mode,
    remove_inference_dropout,
    standalone,
)
from script.artifact.onnx_lower import Exporter, Lowering, flatten, helper, leaf_ranks
from script.artifact.onnx_ops import RULES
from script.errors import Origin, ScriptError, reported
from script.frontend.annotations import class_type
from script.frontend.definition import FunctionDef
from script.module import Module, is_array
from script.runtime.binding import bind_arguments
from script.runtime.function import ScriptFunction
from script.runtime.pipelines import run_pipeline
from script.runtime.script_module import ScriptModule

DEFAULT_OPSET = 18
"""The opset written unless another is asked for (the oldest with ``Split(num_outputs)`` and
reduction axes as inputs; onnxruntime has run it since 1.14)."""

EXPORT_PIPELINE = CLEANUP_PIPELINE + ",licm,hoist-projection,licm,cse,dce"
"""What runs on the graph before lowering: the cleanups, then the input projection of every time
loop hoisted into one matmul over the whole sequence (no unrolling: trip counts stay dynamic)."""

DynamicAxes = bool | Mapping[str, Sequence[int]]


def export_onnx(model_or_fn: Any, example_inputs: Sequence[Any], path: str | os.PathLike[str],
                *, opset: int | None = None, dynamic_axes: DynamicAxes = True) -> None:
    """Write ``model_or_fn`` (a module, scripted module, standalone/loaded module or a scripted
    function) to ``path`` as an ONNX model, traced through its ``forward`` at ``example_inputs``.

    ``dynamic_axes=True`` leaves every axis of an array argument but its last (feature) axis free
    (all axes of a 1-D array), so the model runs at other sequence lengths and batch sizes;
    ``False`` fixes every shape; a mapping ``{argument name: [axes]}`` names the free axes.
    ``opset`` is the ONNX opset (default ``DEFAULT_OPSET``, at least 18). Raises ScriptError,
    before writing anything, for a construct ONNX cannot express here.
    """
    onnx = _onnx()
    with reported(lambda: Origin.of_module(model_or_fn), "exporting"):
        model = onnx_model(model_or_fn, tuple(example_inputs), opset, dynamic_axes)
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as e:
        raise ScriptError(f"export_onnx: the ONNX model made does not pass the checker (a bug "
                          f"in rnnscript; please report it with the model): {e}") from None
    onnx.save(model, os.fspath(path))


def onnx_model(model_or_fn: Any, example_inputs: tuple[Any, ...], opset: int | None,
               dynamic_axes: DynamicAxes) -> Any:
    """The ONNX ``ModelProto`` of ``export_onnx`` (not checked, not written)."""
    opset = _checked_opset(opset)
    fdef, graph = frozen_forward(model_or_fn)
    args = bind_arguments(fdef, example_inputs, {})
    graph = specialized(fdef, graph, args, dynamic_axes)
    exporter = Exporter(opset, RULES)
    main = Lowering(exporter)
    inputs = []
    for value, arg, name in zip(graph.inputs, args, fdef.arg_names):
        sym, infos = _graph_input(exporter, name, arg, value.type)
        main.env[value] = sym
        inputs += infos
    main.lower_block(graph.block)
    leaves = [leaf for v in graph.outputs for leaf in flatten(main.sym(v))[0]]
    ranks = [r for v in graph.outputs for r in leaf_ranks(v.type)]
    outputs = [main.emit("Identity", [main.tensor(leaf)], hint=f"output_{k}")
               for k, leaf in enumerate(leaves)]
    onnx_graph = main.graph(fdef.name.replace(".", "_"), inputs, outputs)
    onnx_graph.initializer.extend(exporter.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="rnnscript",
                              producer_version=__version__)
    model.ir_version = helper.find_min_ir_version_for(opsets)
    _type_outputs(model, ranks if len(ranks) == len(outputs) else [None] * len(outputs))
    return model


def _type_outputs(model: Any, ranks: list[int | None]) -> None:
    """Give the graph outputs a shape (ONNX requires one): the rank the IR type knows, else the
    one ONNX's shape inference finds, sizes left free."""
    import onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        found = {v.name: v.type for v in [*inferred.value_info, *inferred.output]}
    except onnx.shape_inference.InferenceError:  # the checker reports it
        found = {}
    for output, rank in zip(model.graph.output, ranks):
        t = found.get(output.name)
        if rank is None and t is not None and t.tensor_type.HasField("shape"):
            rank = len(t.tensor_type.shape.dim)
        if rank is not None:
            shape = output.type.tensor_type.shape
            shape.SetInParent()
            for _ in range(rank):
                shape.dim.add()


# -- the graph -----------------------------------------------------------------------------------
def frozen_forward(model_or_fn: Any) -> tuple[FunctionDef, Graph]:
    """The ``forward`` of the frozen model: its signature and a graph whose only inputs are the
    arguments, every parameter a named constant."""
    if isinstance(model_or_fn, (Module, StandaloneModule, ScriptFunction)) or \
            hasattr(model_or_fn, "python_module"):
        model = model_or_fn
    elif callable(model_or_fn) and hasattr(model_or_fn, "__code__"):
        model = ScriptFunction(model_or_fn)
    else:
        raise ScriptError(f"export_onnx takes a module or a function, not "
                          f"{type(model_or_fn).__name__}")
    if isinstance(model, (ScriptFunction, StandaloneModule)):
        m = standalone(model)
    else:  # the module in eval mode, its parameters still named inputs (frozen below)
        python_module = getattr(model, "python_module", model)
        with _eval_mode(python_module):
            m = standalone(ScriptModule(python_module))
    method = m.forward
    graph = method.signature.graph.clone()
    if method.bindings:  # the module's arrays become constants named after them
        graph = method._definition.graph.clone()
        nargs = len(method.signature.arg_names)
        with graph.inserting_before(graph.block.param_node.next):
            for value, b in zip(graph.inputs[nargs:], method.bindings):
                value.replace_all_uses_with(graph.constant(np.array(b.parameter.data),
                                                           name=b.name))
        for k in reversed(range(nargs, len(graph.inputs))):
            graph.block.erase_param(k)
        remove_inference_dropout(graph)
    return method.signature, graph


def specialized(fdef: FunctionDef, graph: Graph, args: tuple[Any, ...],
                dynamic_axes: DynamicAxes) -> Graph:
    """``graph`` specialized for the example arguments: arrays by dtype and rank with the
    dynamic axes unknown, every other argument (None, numbers) a constant."""
    if isinstance(dynamic_axes, Mapping):
        unknown = sorted(set(dynamic_axes) - set(fdef.arg_names[:len(args)]))
        if unknown:
            raise ScriptError(f"export_onnx: dynamic_axes names {unknown}, which are not "
                              f"arguments of {fdef.name} (its arguments: "
                              f"{', '.join(fdef.arg_names[:len(args)])})")
    graph = graph.clone()
    run_pipeline(graph, "inline")
    types: list[Type] = []
    with graph.inserting_before(graph.block.param_node.next):
        for value, arg, name in zip(graph.inputs, args, fdef.arg_names):
            t = _array_type(arg, _free_axes(dynamic_axes, name, arg))
            if isinstance(arg, list):
                raise ScriptError(f"export_onnx: argument '{name}' is a list; ONNX inputs are "
                                  "arrays (pass arrays, or a tuple of arrays)")
            if t is None:
                if value.type == FLOAT and isinstance(arg, int):
                    arg = float(arg)
                value.replace_all_uses_with(graph.constant(arg))
                t = value.type
            types.append(t)
    specialize(graph, types)
    remove_inference_dropout(graph)
    with fold_limit(0):  # weights stay as they are named (w.T is ONNX's, folded by runtimes)
        run_pipeline(graph, EXPORT_PIPELINE)
    return graph


def _free_axes(dynamic_axes: DynamicAxes, name: str, arg: Any) -> Any:
    """The free axes of argument ``name`` (a function of the array's rank)."""
    if isinstance(dynamic_axes, Mapping):
        axes = {a for a in dynamic_axes.get(name, ())}

        def free(rank: int) -> set[int]:
            bad = [a for a in axes if not (isinstance(a, int) and -rank <= a < rank)]
            if bad:
                raise ScriptError(f"export_onnx: dynamic_axes[{name!r}] holds {bad}, not axes "
                                  f"of an array of {rank} dimensions")
            return {a % rank for a in axes}
        return free
    if not dynamic_axes:
        return lambda rank: set()
    return lambda rank: set(range(max(rank - 1, 1))) if rank else set()


def _array_type(arg: Any, free: Any) -> Type | None:
    """The IR type of an array argument (or a tuple of arrays), None for anything else."""
    if is_array(arg):
        shape = tuple(None if k in free(arg.ndim) else n for k, n in enumerate(arg.shape))
        return TensorType(str(arg.dtype), shape, "cpu")
    if isinstance(arg, tuple) and arg and all(is_array(a) for a in arg):
        elements = tuple(_array_type(a, free) for a in arg)
        declared = class_type(type(arg)) if hasattr(arg, "_fields") else None
        if isinstance(declared, ClassType) and declared.named_tuple:  # a NamedTuple: its fields
            return ClassType(declared.name, tuple(zip(arg._fields, elements)), named_tuple=True)
        return TupleType(elements)
    return None


def _graph_input(exporter: Any, name: str, arg: Any, t: Type) -> tuple[Any, list[Any]]:
    """The symbol of a graph input and the ONNX inputs it stands for."""
    if isinstance(t, (TupleType, ClassType)):
        types = t.elements if isinstance(t, TupleType) else [e for _, e in t.fields]
        parts = [_graph_input(exporter, f"{name}_{k}", a, e)
                 for k, (a, e) in enumerate(zip(arg, types))]
        return tuple(p[0] for p in parts), [i for p in parts for i in p[1]]
    if not isinstance(t, TensorType):
        return arg, []
    onnx_name = exporter.fresh(name)
    exporter.dtypes[onnx_name] = np.dtype(t.dtype)
    dims = [f"{onnx_name}_dim{k}" if n is None else n for k, n in enumerate(t.shape)]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(t.dtype))
    return onnx_name, [helper.make_tensor_value_info(onnx_name, elem, dims)]


def _checked_opset(opset: int | None) -> int:
    import onnx
    newest = onnx.defs.onnx_opset_version()
    opset = DEFAULT_OPSET if opset is None else opset
    if not DEFAULT_OPSET <= opset <= newest:
        raise ScriptError(f"export_onnx: opset {opset} is not supported (use {DEFAULT_OPSET} to "
                          f"{newest})")
    return opset


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ScriptError("export_onnx needs the onnx package: pip install 'rnnscript[onnx]'"
                          ) from None
    return onnx
