"""``save`` / ``load``: a scripted or frozen module as one self-contained file.

The file is a zip archive with three kinds of members:

- ``manifest.json``: the format name and version, the package version, the module's class name,
  whether it is frozen and its training mode, per method its graph member, argument names and
  types, defaults, return type and the named arrays that follow the arguments as graph inputs,
  the NamedTuple / script classes the methods use (name and typed fields), every array's dtype
  and shape, and the SHA-256 and size of every other member; ``manifest.sha256`` holds the
  manifest's own SHA-256 (hex);
- ``graphs/<method>.ir``: each method's graph as IR text (``str(graph)``), inlined; large array
  constants are written as references ``array(Float(512, 2048), ref="c0")`` into the constants;
- ``constants/<name>.npy``, ``parameters/<dotted name>.npy``, ``buffers/<dotted name>.npy``: the
  arrays in NumPy's ``.npy`` format (written with ``allow_pickle=False``; numeric dtypes only).

Loading trusts nothing in the file. It never unpickles and never evaluates text from the file:
``.npy`` headers are read by NumPy's literal parser and the data is taken as raw bytes of a
numeric dtype; graphs go through the IR parser, which only accepts registered op kinds, then the
verifier; the Python code that runs is generated from the parsed graph by the code generator.
Whatever is wrong (an unreadable or truncated archive, an unknown format version, a checksum or
size mismatch, a missing or unexpected member, a malformed manifest, an object array, an unknown op
kind, a graph that disagrees with the manifest) is a ``script.LoadError`` naming the reason.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
from typing import Any

import numpy as np

import ir
from ir.core import SUBGRAPH, Graph
from ir.printer import print_graph
from ir.types import DTYPE_NAMES, ClassType, DictType, ListType, OptionalType, TupleType, Type
from script.artifact.archive import (
    ARRAY_ROLES,
    FIELD_PATTERN,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MANIFEST_DIGEST,
    NAME_PATTERN,
    Archive,
    guarded,
    manifest_digest,
    package_version,
    read_archive,
)
from script.artifact.freeze import (
    NO_SOURCE,
    Binding,
    StandaloneMethod,
    StandaloneModule,
    class_types,
    graph_types,
    standalone,
)
from script.errors import LoadError, Origin, ScriptError, reported
from script.frontend import classes
from script.frontend.classes import class_info
from script.frontend.definition import FunctionDef
from script.module import Parameter

_TYPE_TEXT = re.compile(r"[A-Za-z0-9_.,()\[\]?* =]{1,1000}")
"""What a type written in the manifest may contain (no newlines, ``%`` or ``#``)."""


# -- saving --------------------------------------------------------------------------------------
def save(module: Any, path: str | os.PathLike[str] | io.IOBase) -> None:
    """Write ``module`` (scripted, frozen or loaded) to one file at ``path`` (or a binary file
    object). An unfrozen module is saved with its parameters as named arrays."""
    with reported(lambda: Origin.of_module(module), "saving"):
        _save(module, path)


def _save(module: Any, path: str | os.PathLike[str] | io.IOBase) -> None:
    m = module if isinstance(module, StandaloneModule) else standalone(module)
    constants: dict[str, Any] = {}
    members: dict[str, bytes] = {}
    methods = {}
    for name, method in m.methods.items():
        if not NAME_PATTERN.fullmatch(name) or "." in name:
            raise ScriptError(f"save: cannot save a method named {name!r}")
        text = _graph_text(method.signature.graph, constants, name)
        member = f"graphs/{name}.ir"
        members[member] = text.encode("utf-8")
        methods[name] = _method_entry(method, member)
    arrays: dict[str, dict[str, Any]] = {role: {} for role in ARRAY_ROLES}
    for name, value in constants.items():
        arrays["constants"][name] = _add_array(members, f"constants/{name}.npy", value, name)
    for b in m.bindings():
        role = "parameters" if b.trainable else "buffers"
        arrays[role][b.name] = _add_array(members, f"{role}/{b.name}.npy", b.parameter.data,
                                          b.name)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "package_version": package_version(),
        "module": m.name, "frozen": m.frozen, "training": m.training, "methods": methods,
        "classes": _class_entries(m), **arrays,
        "members": {name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                    for name, data in members.items()},
    }
    text = json.dumps(manifest, indent=1).encode("utf-8")
    members = {MANIFEST: text, MANIFEST_DIGEST: manifest_digest(text), **members}
    _write_zip(path, members)



def _graph_text(graph: Graph, constants: dict[str, Any], method: str) -> str:
    text = print_graph(graph, constants)
    try:
        again = print_graph(ir.parse(text, constants=constants), {})
    except ir.ParseError as e:
        raise ScriptError(f"save: the graph of '{method}' cannot be written as text: {e}"
                          ) from None
    if again != print_graph(graph, {}):
        raise ScriptError(f"save: the graph of '{method}' does not read back identically")
    return text


def _method_entry(method: StandaloneMethod, member: str) -> dict[str, Any]:
    sig = method.signature
    nargs = len(sig.arg_names)
    return {
        "graph": member,
        "arg_names": list(sig.arg_names),
        "arg_types": [str(v.type) for v in sig.graph.inputs[:nargs]],
        "defaults": {k: _encode_default(k, v) for k, v in sig.defaults.items()},
        "return_type": str(sig.graph.outputs[0].type),
        "inputs": [b.name for b in method.bindings],
        "array_results": [list(path) for path in sig.array_results],
    }


def _encode_default(name: str, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode_default(name, v) for v in value]}
    raise ScriptError(f"save: the default value of '{name}' ({type(value).__name__}) cannot be "
                      "saved; only None, bool, int, float, str and tuples of them")


def _class_entries(m: StandaloneModule) -> dict[str, Any]:
    found: dict[str, ClassType] = {}
    for method in m.methods.values():
        for t in graph_types(method.signature.graph):
            for c in class_types(t):
                found.setdefault(c.name, c)
    entries = {}
    for name in found:
        declared = class_info(ClassType(name)).type  # the fields as declared, not specialized
        entries[name] = {"named_tuple": declared.named_tuple,
                         "fields": [[f, str(t)] for f, t in declared.fields]}
    return entries


def _add_array(members: dict[str, bytes], member: str, value: Any, name: str) -> dict[str, Any]:
    array = np.asarray(value.get() if hasattr(value, "get") and not isinstance(value, np.ndarray)
                       else value)
    if array.dtype.name not in DTYPE_NAMES:
        raise ScriptError(f"save: array '{name}' has dtype {array.dtype}, which cannot be saved")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(array), allow_pickle=False)
    members[member] = buf.getvalue()
    return {"member": member, "dtype": array.dtype.name, "shape": list(array.shape)}


def _write_zip(path: Any, members: dict[str, bytes]) -> None:
    def write(target: Any) -> None:
        with zipfile.ZipFile(target, "w") as zf:
            for name, data in members.items():
                method = zipfile.ZIP_STORED if name.endswith(".npy") else zipfile.ZIP_DEFLATED
                zf.writestr(name, data, method)
    if hasattr(path, "write"):
        write(path)
        return
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)  # never leave a half-written model under the real name
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)



# -- loading -------------------------------------------------------------------------------------
def load(path: str | os.PathLike[str] | io.IOBase, device: str | None = None
         ) -> StandaloneModule:
    """Rebuild the module saved at ``path`` (a file name or binary file object), runnable
    without the code that defined it; ``device="cuda"`` puts its arrays on the GPU (CuPy).

    Raises ``script.LoadError`` when the file cannot be loaded, with the reason.
    """
    if device not in (None, "cpu", "cuda"):
        raise LoadError(f"unknown device {device!r} (expected None, 'cpu' or 'cuda')")
    to_device = _cuda_converter() if device == "cuda" else None
    return guarded(path, lambda: _load(read_archive(path), to_device))



def _cuda_converter() -> Any:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - ImportError, no driver, no device: all mean no GPU
        raise LoadError(f"device='cuda' needs CuPy and a CUDA device ({type(e).__name__}: "
                        f"{e})") from None
    return cupy.asarray


def _load(archive: Archive, to_device: Any) -> StandaloneModule:
    manifest = archive.manifest
    convert = to_device or (lambda a: a)
    constants = {name: convert(_read_only(archive.array("constants", name)))
                 for name in manifest["constants"]}
    holders = {}
    for role in ("parameters", "buffers"):
        for name in manifest[role]:
            holder = Parameter(convert(archive.array(role, name)))
            holders[name] = Binding(name, holder, trainable=role == "parameters")
    classes = ClassTable(manifest["classes"])
    methods = {}
    for name, entry in manifest["methods"].items():
        graph = _read_graph(archive, name, entry, constants, classes)
        if to_device is not None:
            _constants_to_device(graph, to_device)
        bindings = [holders[ref] for ref in entry["inputs"]]
        signature = _signature(name, entry, graph, manifest["module"])
        methods[name] = StandaloneMethod(signature, bindings, frozen=manifest["frozen"])
    return StandaloneModule(manifest["module"], methods, manifest["frozen"],
                            manifest["training"], classes.python_classes(),
                            list(holders.values()))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # a constant compiled into code: shared, never written
    return array


def _read_graph(archive: Archive, name: str, entry: dict[str, Any], constants: dict[str, Any],
                classes: ClassTable) -> Graph:
    member = entry["graph"]
    try:
        graph = ir.parse(archive.text(member), constants=constants)
    except ir.ParseError as e:
        raise LoadError(f"graph of method '{name}' ({member}): {e}") from None
    classes.resolve_graph(graph)
    try:
        graph.verify()
    except ir.VerifyError as e:
        raise LoadError(f"graph of method '{name}' ({member}) is malformed: {e}") from None
    _check_generated_names(graph, name)
    _check_interface(graph, name, entry)
    return graph


def _check_interface(graph: Graph, name: str, entry: dict[str, Any]) -> None:
    """The graph's inputs and result must be what the manifest promises."""
    nargs = len(entry["arg_names"])
    if len(graph.inputs) != nargs + len(entry["inputs"]) or len(graph.outputs) != 1:
        raise LoadError(f"graph of method '{name}' has {len(graph.inputs)} inputs and "
                        f"{len(graph.outputs)} results; the manifest says "
                        f"{nargs + len(entry['inputs'])} inputs and 1 result")
    for arg, text, value in zip(entry["arg_names"], entry["arg_types"], graph.inputs):
        if str(value.type) != text:
            raise LoadError(f"method '{name}': argument '{arg}' is {value.type} in the graph "
                            f"but {text} in the manifest")
    if str(graph.outputs[0].type) != entry["return_type"]:
        raise LoadError(f"method '{name}' returns {graph.outputs[0].type} in the graph but "
                        f"{entry['return_type']} in the manifest")


_NAMED_ATTR_KINDS = ("prim::GetAttr", "prim::LoadAttr", "prim::SetAttr")


def _check_generated_names(graph: Graph, method: str) -> None:
    """Attribute names become Python attribute accesses in generated code: plain fields only."""
    pending = [graph]
    while pending:
        g = pending.pop()
        for node in g.walk():
            sub = node.attrs.get(SUBGRAPH)
            if isinstance(sub, Graph):
                pending.append(sub)
            if node.kind not in _NAMED_ATTR_KINDS:
                continue
            field = node.attrs.get("name")
            if not isinstance(field, str) or not FIELD_PATTERN.fullmatch(field) or \
                    field.startswith("__"):
                raise LoadError(f"graph of method '{method}': {node.kind} of a bad field "
                                f"name {field!r}")


def _constants_to_device(graph: Graph, to_device: Any) -> None:
    for node in graph.walk():
        if node.kind == "prim::Constant" and isinstance(node.attrs.get("value"), np.ndarray):
            node.attrs["value"] = to_device(node.attrs["value"])


def _signature(name: str, entry: dict[str, Any], graph: Graph, module: str) -> FunctionDef:
    nargs = len(entry["arg_names"])
    defaults = {k: _decode_default(v, f"default of '{k}'") for k, v in entry["defaults"].items()}
    graph.name = f"{module}.{name}"
    signature = FunctionDef(f"{module}.{name}", graph, list(entry["arg_names"]),
                            [v.type for v in graph.inputs[:nargs]], defaults,
                            graph.outputs[0].type, NO_SOURCE)
    signature.array_results = _array_results(entry.get("array_results", []), name)
    return signature


def _array_results(paths: Any, name: str) -> tuple[tuple[Any, ...], ...]:
    """Where a method's result is numpy's 0-d array (``FunctionDef.array_results``): lists of
    indices and keys (absent in a file saved before they were kept: none)."""
    if not isinstance(paths, list) or not all(
            isinstance(p, list) and all(type(k) in (int, str) for k in p) for p in paths):
        raise LoadError(f"method '{name}': array_results must be lists of ints and strs, got "
                        f"{paths!r}")
    return tuple(tuple(p) for p in paths)


def _decode_default(value: Any, what: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict) and list(value) == ["tuple"] and isinstance(value["tuple"], list):
        return tuple(_decode_default(v, what) for v in value["tuple"])
    raise LoadError(f"{what}: cannot read {value!r}")


# -- classes -------------------------------------------------------------------------------------
def parse_type(text: Any, what: str) -> Type:
    """A type written as IR text (``Float(*, 4)``, ``(Tensor, int)``, ``__class__.S[]``)."""
    if not isinstance(text, str) or not _TYPE_TEXT.fullmatch(text):
        raise LoadError(f"{what}: bad type {text!r}")
    try:
        graph = ir.parse(f"graph(%x : {text}):\n  return (%x)\n")
    except ir.ParseError as e:
        raise LoadError(f"{what}: bad type {text!r} ({e.message})") from None
    if len(graph.inputs) != 1:
        raise LoadError(f"{what}: bad type {text!r}")
    return graph.inputs[0].type


class ClassTable:
    """The classes a saved model uses: their full types (the IR text names classes without
    their fields) and the Python classes generated code builds, registered for this process."""

    def __init__(self, entries: dict[str, Any]):
        self.entries = entries
        self.types: dict[str, ClassType] = {}
        self.classes: dict[str, type] = {}
        for name in entries:
            self._define(name, ())

    def _define(self, name: str, active: tuple[str, ...]) -> ClassType:
        if name in self.types:
            return self.types[name]
        if name in active:
            raise LoadError(f"class {name!r} contains itself")
        entry = self.entries.get(name)
        if entry is None:
            raise LoadError(f"the graphs use class {name!r}, which the manifest does not define")
        fields = tuple((f, self.resolve(parse_type(t, f"field '{f}' of class {name!r}"),
                                        (*active, name)))
                       for f, t in entry["fields"])
        declared = ClassType(name, fields, entry["named_tuple"])
        cls, registered = _register_class(declared)
        self.types[name] = registered
        self.classes[name] = cls
        return registered

    def resolve(self, t: Type, active: tuple[str, ...] = ()) -> Type:
        """``t`` with every class named in it replaced by its full registered type."""
        if isinstance(t, ClassType):
            return self._define(t.name, active)
        if isinstance(t, TupleType):
            return TupleType(tuple(self.resolve(e, active) for e in t.elements))
        if isinstance(t, ListType):
            return ListType(self.resolve(t.element, active))
        if isinstance(t, OptionalType):
            return OptionalType(self.resolve(t.element, active))
        if isinstance(t, DictType):
            return DictType(t.key, self.resolve(t.value, active))
        return t

    def resolve_graph(self, graph: Graph) -> None:
        pending = [graph]
        while pending:
            g = pending.pop()
            values = list(g.inputs)
            for node in g.walk():
                values += node.outputs
                for block in node.blocks:
                    values += block.params
                for key, attr in node.attrs.items():
                    if isinstance(attr, Graph):
                        pending.append(attr)
                    elif isinstance(attr, Type):
                        node.attrs[key] = self.resolve(attr)
            for v in values:
                v.type = self.resolve(v.type)

    def python_classes(self) -> dict[str, type]:
        return dict(self.classes)


def _register_class(declared: ClassType) -> tuple[type, ClassType]:
    """The Python class for ``declared``: the one this process already registered under that
    name when it has the same fields, else a new class (registered under a free name)."""
    try:
        existing = classes.class_info(ClassType(declared.name))
    except KeyError:
        existing = None
    if existing is not None and existing.type == declared:
        return existing.cls, existing.type
    cls = _make_class(declared)
    name = classes._unique_name(cls)
    registered = ClassType(name, declared.fields, declared.named_tuple)
    classes._register(cls, registered)
    return cls, registered


def _make_class(t: ClassType) -> type:
    """A plain Python class with ``t``'s fields (a tuple subclass for a NamedTuple), built
    without evaluating any text."""
    short = t.name.rsplit(".", 1)[-1]
    fields = tuple(name for name, _ in t.fields)
    if not t.named_tuple:
        cls = type(short, (), {"__slots__": fields, "__module__": __name__,
                               "__repr__": _object_repr})
        cls.__qualname__ = t.name
        return cls
    namespace: dict[str, Any] = {"__slots__": (), "_fields": fields, "__module__": __name__,
                                 "__new__": _tuple_new, "__repr__": _tuple_repr,
                                 "__getnewargs__": lambda self: tuple(self)}
    for k, name in enumerate(fields):
        namespace[name] = property(lambda self, k=k: tuple.__getitem__(self, k),
                                   doc=f"field {k}")
    cls = type(short, (tuple,), namespace)
    cls.__qualname__ = t.name
    return cls


def _tuple_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    fields = cls._fields  # type: ignore[attr-defined]
    values = list(args) + [kwargs.pop(f) for f in fields[len(args):] if f in kwargs]
    if kwargs or len(values) != len(fields):
        raise TypeError(f"{cls.__name__}() takes the fields {', '.join(fields)}")
    return tuple.__new__(cls, values)


def _tuple_repr(self: Any) -> str:
    items = ", ".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"{type(self).__name__}({items})"


def _object_repr(self: Any) -> str:
    return f"<{type(self).__qualname__} object>"
