"""``Module``, ``Parameter``, ``ModuleList``: the ``torch.nn.Module`` programming model on arrays.

A ``Module`` registers what is assigned to it: a ``Parameter`` becomes a parameter, a ``Module`` a
submodule, a list or tuple of modules a ``ModuleList``; everything else is a plain attribute.
Inside ``forward`` (eager or scripted) ``self.weight`` reads as the parameter's array, so the same
code runs as Python and compiles with ``script(module)``. ``named_parameters()`` gives dotted names
(``layers.0.cell.weight_ih``) in registration order, ``state_dict()`` / ``load_state_dict()`` move
plain arrays in and out, and ``train()`` / ``eval()`` set the ``training`` flag of the whole tree.
"""

from __future__ import annotations

import itertools
import sys
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np


def is_array(value: Any) -> bool:
    """A numpy or CuPy ndarray (not another CuPy object: a ufunc, a stream)."""
    return isinstance(value, np.ndarray) or is_cupy_array(value)


def is_cupy_array(value: Any) -> bool:
    """A ``cupy.ndarray``. CuPy is never imported here: a value can only be one once the caller
    has imported CuPy."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(value, cupy.ndarray)


def is_module(obj: Any) -> bool:
    """A ``Module`` (a ``ScriptModule`` included)."""
    return isinstance(obj, Module)


class Parameter:
    """A trainable array of a ``Module``: ``.data`` is the array, ``.grad`` its gradient.

    Optimizers update ``.data`` in place (``p.data -= lr * p.grad``) or rebind it; both are seen
    by every compiled module that shares the parameter, because compiled code reads ``.data`` at
    call time.
    """

    __slots__ = ("data", "grad", "requires_grad", "__weakref__")

    def __init__(self, data: Any, requires_grad: bool = True):
        if isinstance(data, Parameter):
            data = data.data
        self.data = data if is_array(data) else np.asarray(data)
        """the array."""
        self.grad: Any = None
        """the accumulated gradient (an array of the same shape), or None."""
        self.requires_grad = requires_grad
        """False for a frozen parameter: backward leaves its ``.grad`` None, as torch's, so an
        optimizer (weight decay included) leaves it as it is."""
        _live_parameters.add(self)

    def __getstate__(self) -> dict[str, Any]:
        return {"data": self.data, "grad": self.grad, "requires_grad": self.requires_grad}

    def __setstate__(self, state: dict[str, Any]) -> None:  # a copy or an unpickled one
        self.data, self.grad = state["data"], state["grad"]
        self.requires_grad = state.get("requires_grad", True)
        _live_parameters.add(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.data, dtype=dtype)

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype})"


_live_parameters: weakref.WeakSet[Parameter] = weakref.WeakSet()
"""Every Parameter alive, for ``_parameter_holding``."""


def _parameter_holding(array: Any, replaced: Any, tree: list[Parameter]) -> Parameter | None:
    """The Parameter whose ``.data`` is ``array`` itself: a module attribute holding a parameter
    reads as its array, so ``decoder.weight = encoder.weight`` assigns that array, which ties the
    two as torch's does (a copy of it does not). Looked for in the module's own tree (``tree``);
    where the name replaces a parameter (``replaced`` not None: the assignment is a tie or an
    error) among every Parameter alive (the encoder is the decoder's sibling)."""
    for param in tree:
        if param.data is array:
            return param
    if replaced is not None:
        for param in list(_live_parameters):
            if param.data is array:
                return param
    return None


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` could not match."""

    missing_keys: list[str]
    unexpected_keys: list[str]


_versions = itertools.count(1)
_state_version = 0


def state_version() -> int:
    """A number that changes whenever a module's structure or plain attributes may have changed:
    an attribute, parameter or submodule assigned or deleted, a ``ModuleList`` changed,
    ``train()``/``eval()``, ``to()``/``float()``/.... Compiled modules check their guards again
    only when it differs from the one they last saw them hold at (a parameter's ``.data`` is
    not a guard: it is read at every call)."""
    return _state_version


def state_changed() -> None:
    """Note a change ``state_version`` stands for (for code that sets a module attribute with
    ``object.__setattr__``)."""
    global _state_version
    _state_version = next(_versions)


class Module:
    """Base class of models: subclass it, assign parameters and submodules in ``__init__`` and
    write ``forward``. Calling the module runs ``forward`` as Python; ``script(module)`` compiles
    it."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    _DERIVED = ("_compiled", "_refused", "_walk_kept")
    """What a module keeps that is made from it (its compiled code, a walk of its tree): a copy
    (``copy.deepcopy``, ``pickle``) leaves them out and makes its own."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._DERIVED:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # -- registration ---------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if params is None:
            raise AttributeError(f"cannot assign '{name}' before Module.__init__() is called")
        modules = self.__dict__["_modules"]
        if is_array(value):  # decoder.weight = encoder.weight: the same Parameter, tied
            tied = _parameter_holding(value, params.values() if name in params else None,
                                      self._walk()[1])
            if tied is not None:
                value = tied
        if isinstance(value, Parameter):
            self._forget(name)
            params[name] = value
        elif isinstance(value, Module):
            self._forget(name)
            modules[name] = value
        elif _is_module_sequence(value):
            self._forget(name)
            modules[name] = ModuleList(value)
        elif name in params:
            raise TypeError(f"cannot assign a {type(value).__name__} to parameter '{name}' "
                            "(a Parameter is expected; to change its array assign to "
                            f"'.{name}' of the Parameter: module.get_parameter('{name}').data)")
        else:
            self._forget(name)
            object.__setattr__(self, name, value)
        state_changed()

    def _forget(self, name: str) -> None:
        self.__dict__["_parameters"].pop(name, None)
        self.__dict__["_modules"].pop(name, None)
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: parameters read as their arrays
        d = self.__dict__
        params = d.get("_parameters", {})
        if name in params:
            return params[name].data
        modules = d.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters or name in self._modules:
            self._forget(name)
        else:
            object.__delattr__(self, name)
        state_changed()

    def register_parameter(self, name: str, param: Parameter) -> None:
        """Same as ``self.<name> = param``."""
        setattr(self, name, param)

    def add_module(self, name: str, module: Module) -> None:
        """Same as ``self.<name> = module``."""
        setattr(self, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The ``Parameter`` object with dotted name ``target`` (``"layers.0.cell.weight_ih"``)."""
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner) if owner else self
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter '{name}'")
        return module._parameters[name]

    def get_submodule(self, target: str) -> Module:
        """The submodule with dotted name ``target`` (``""`` is the module itself)."""
        module = self
        for part in filter(None, target.split(".")):
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no submodule '{part}'")
            module = module._modules[part]
        return module

    # -- running --------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def train(self, mode: bool = True) -> Module:
        """Set ``training`` on this module and every submodule; returns ``self``."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        state_changed()
        return self

    def eval(self) -> Module:
        """``train(False)``."""
        return self.train(False)

    # -- traversal ------------------------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, submodule) of the direct submodules, in registration order."""
        yield from self._modules.items()

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """(dotted name, module) of this module and every submodule, each once."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{k}" if name else k, m) for k, m in module._modules.items()]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        yield from self._tree()

    def _tree(self) -> list[Module]:
        """This module and every submodule, each once, in ``named_modules``'s order."""
        return self._walk()[0]

    def _walk(self) -> tuple[list[Module], list[Parameter]]:
        """``(modules, parameters)`` of the tree, each once, as ``modules()`` and
        ``parameters()`` give them; kept until ``state_version`` moves (they run at every
        training step: ``zero_grad``, optimizers, gradient clipping)."""
        kept = self.__dict__.get("_walk_kept")
        version = _state_version
        if kept is not None and kept[0] == version and kept[1][0][0] is self:  # not a copy's
            return kept[1]
        seen: set[int] = set()
        found = []
        stack: list[Module] = [self]
        while stack:
            module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            found.append(module)
            stack.extend(reversed(module._modules.values()))
        params = list({id(p): p for m in found for p in m._parameters.values()}.values())
        self.__dict__["_walk_kept"] = (version, (found, params))
        return found, params

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, Parameter), each parameter once, in registration order."""
        seen: set[int] = set()
        owners = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for owner, module in owners:
            for name, param in module._parameters.items():
                if id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{owner}.{name}" if owner else name), param

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        if not recurse:
            return iter(list({id(p): p for p in self._parameters.values()}.values()))
        return iter(self._walk()[1])

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        """(dotted name, array) of the plain array attributes (state that is not trained)."""
        for owner, module in self.named_modules(prefix):
            for name, value in module.__dict__.items():
                if not name.startswith("_") and is_array(value):
                    yield (f"{owner}.{name}" if owner else name), value

    def buffers(self) -> Iterator[Any]:
        for _, value in self.named_buffers():
            yield value

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (fill it with zeros with ``set_to_none=False``)."""
        for param in self.parameters():
            if set_to_none or param.grad is None:
                param.grad = None
            else:
                param.grad[...] = 0

    # -- conversion -----------------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``torch.nn.Module.to``: ``to(device)``, ``to(dtype)``, ``to(device, dtype)`` (or the
        keywords ``device=``, ``dtype=``). Every parameter (its ``.data`` and ``.grad``, the
        ``Parameter`` objects stay the same) and array attribute is converted in place: a device
        (``"cpu"``: numpy, ``"cuda"``/``"cuda:N"``: CuPy) moves all of them, a dtype converts the
        floating-point ones. Returns ``self``; compiled code re-specializes on the new dtypes.
        A CUDA device without CuPy or without a GPU is a ``RuntimeError`` before anything
        moves."""
        device, dtype = _to_arguments(args, kwargs)
        if device is not None:
            check_device(device)
        return self._apply(lambda a: convert_array(a, device, dtype))

    def float(self) -> Module:
        """Floating-point parameters and arrays to float32 (``to(dtype="float32")``)."""
        return self.to(dtype="float32")

    def double(self) -> Module:
        """Floating-point parameters and arrays to float64."""
        return self.to(dtype="float64")

    def half(self) -> Module:
        """Floating-point parameters and arrays to float16."""
        return self.to(dtype="float16")

    def cpu(self) -> Module:
        """Parameters and arrays to numpy (``to("cpu")``)."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Module:
        """Parameters and arrays to CuPy (``to("cuda")``)."""
        return self.to("cuda" if device is None else f"cuda:{device}")

    def _apply(self, convert: Any) -> Module:
        """Replace every parameter's ``.data``/``.grad`` and array attribute by
        ``convert(array)``, then let each module refresh what depends on them
        (``_on_converted``)."""
        for param in self.parameters():
            param.data = convert(param.data)
            if param.grad is not None:
                param.grad = convert(param.grad)
        for module in self.modules():
            for name, value in list(module.__dict__.items()):
                if not name.startswith("_") and is_array(value):
                    object.__setattr__(module, name, convert(value))
            module._on_converted()
        state_changed()
        return self

    def _on_converted(self) -> None:
        """Called after ``to``/``float``/... converted the module's arrays: a module that keeps
        facts about them (a dtype name for the zeros it makes) refreshes them here."""

    # -- state ----------------------------------------------------------------------------------
    _private_modules: tuple[str, ...] = ()
    """Submodules whose parameters the module registers under names of its own (an ``rnn.LSTM``
    exposes its cells' weights as ``weight_ih_l0``...): ``state_dict`` leaves their names out."""

    def _tied_names(self) -> dict[str, Parameter]:
        """Every dotted name of every parameter, a tied one under each of its names (torch's
        ``state_dict`` lists them all), but the names inside private submodules."""
        private = [f"{path}.{sub}" if path else sub for path, m in self.named_modules()
                   for sub in getattr(m, "_private_modules", ())]
        names = {}
        for path, m in self.named_modules():
            if any(path == p or path.startswith(p + ".") for p in private):
                continue
            for name, param in m._parameters.items():
                names[f"{path}.{name}" if path else name] = param
        return names

    def state_dict(self) -> dict[str, Any]:
        """Parameters' arrays and array attributes by dotted name (the arrays themselves); a
        parameter tied under several names is there under each, as in torch."""
        state = {name: p.data for name, p in self.named_parameters()}
        for name, p in self._tied_names().items():
            state.setdefault(name, p.data)
        state.update(self.named_buffers())
        return state

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy arrays into the parameters and array attributes in place (shapes must match).

        With ``strict`` a missing or unexpected key is a KeyError; otherwise they are returned.
        """
        targets = dict(self.named_parameters())
        for name, p in self._tied_names().items():
            targets.setdefault(name, p)
        buffers = dict(self.named_buffers())
        known = set(targets) | set(buffers)
        given = {id(targets[n]) for n in set(state) & set(targets)}
        missing = sorted(n for n in known - set(state)  # a tied parameter: one name is enough
                         if n not in targets or id(targets[n]) not in given)
        unexpected = sorted(set(state) - known)
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys "
                           f"{unexpected}")
        for name in known & set(state):
            current = targets[name].data if name in targets else buffers[name]
            value = state[name]
            if tuple(np.shape(value)) != tuple(current.shape):
                raise ValueError(f"load_state_dict: '{name}' has shape {tuple(current.shape)} "
                                 f"but the state has {tuple(np.shape(value))}")
            current[...] = value
        return IncompatibleKeys(missing, unexpected)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for name, module in self._modules.items():
            inner = repr(module).replace("\n", "\n  ")
            lines.append(f"  ({name}): {inner}")
        for name, param in self._parameters.items():
            lines.append(f"  {name}: {param!r}")
        if len(lines) == 1:
            return f"{type(self).__name__}()"
        return "\n".join(lines) + "\n)"


DEVICES = ("cpu", "cuda")
"""The devices ``Module.to`` moves arrays to (``"cuda:N"`` names a GPU)."""


def _to_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str | None, Any]:
    """``(device, dtype)`` from ``to``'s arguments, either of them None."""
    unknown = set(kwargs) - {"device", "dtype", "non_blocking", "copy"}
    if unknown or len(args) > 2:
        raise TypeError(f"to() takes (device, dtype); got {len(args)} positional arguments "
                        f"and the keywords {sorted(kwargs)}")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, str) and arg.split(":")[0] in DEVICES:
            device = arg
        else:
            dtype = arg
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"to(): {dtype!r} is neither a device ('cpu', 'cuda', 'cuda:N') "
                            "nor a dtype") from None
        if dtype.kind != "f":
            raise TypeError(f"to(): a module converts to a floating-point dtype, not {dtype}")
    if device is not None and not _is_device(device):
        raise ValueError(f"to(): unknown device {device!r} (expected 'cpu', 'cuda' or "
                         "'cuda:N')")
    return device, dtype


def _is_device(device: Any) -> bool:
    kind, _, index = str(device).partition(":")
    return kind in DEVICES and (not index or (kind == "cuda" and index.isdigit()))


def check_device(device: str) -> None:
    """Raise ``RuntimeError`` when arrays cannot move to ``device``: ``"cuda"`` / ``"cuda:N"``
    needs CuPy and a CUDA device (device ``N`` among them)."""
    if device == "cpu":
        return
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - ImportError, no driver, no device: all mean no GPU
        raise RuntimeError(f"to({device!r}): moving a module to a GPU needs CuPy and a CUDA "
                           f"device ({type(e).__name__}: {e})") from None
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= count:
        raise RuntimeError(f"to({device!r}): there is no CUDA device {index} ({count} found)")


def convert_array(a: Any, device: str | None, dtype: Any) -> Any:
    """``a`` on ``device`` (numpy for ``"cpu"``, CuPy for ``"cuda[:N]"``), floating-point arrays
    as ``dtype``; ``a`` itself when nothing changes."""
    if device is not None:
        a = _on_device(a, device)
    if dtype is not None and a.dtype.kind == "f" and a.dtype != dtype:
        a = a.astype(dtype)
    return a


def _on_device(a: Any, device: str) -> Any:
    on_gpu = not isinstance(a, np.ndarray)
    if device == "cpu":
        return a.get() if on_gpu else a
    import cupy  # only a move to a GPU needs it
    index = int(device.split(":")[1]) if ":" in device else None
    if on_gpu and (index is None or a.device.id == index):
        return a
    with cupy.cuda.Device(index if index is not None else cupy.cuda.Device().id):
        return cupy.asarray(a)


class ModuleList(Module):
    """A list of submodules, registered as ``"0"``, ``"1"``, ...; indexable, sliceable and
    iterable. In scripted code it is iterated by unrolling, so its modules may differ in type."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for module in modules or ():
            self.append(module)

    def _items(self) -> list[Module]:
        return list(self._modules.values())

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items())

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ModuleList(self._items()[index])
        return self._items()[index]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[index]
        _check_module(module)
        self._modules[key] = module
        state_changed()

    def append(self, module: Module) -> ModuleList:
        _check_module(module)
        self._modules[str(len(self._modules))] = module
        state_changed()
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = self._items()
        _check_module(module)
        items.insert(index, module)
        self._modules.clear()
        self.extend(items)
        state_changed()


def _check_module(value: Any) -> None:
    if not isinstance(value, Module):
        raise TypeError(f"a ModuleList holds Modules, not {type(value).__name__}")


def _is_module_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and not isinstance(value, ModuleList) and \
        bool(value) and all(isinstance(v, Module) for v in value) and \
        not hasattr(value, "_fields")
