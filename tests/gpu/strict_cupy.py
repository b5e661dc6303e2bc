"""A strict stand-in for CuPy, for machines without a GPU: ``install()`` puts a ``cupy`` module in
``sys.modules`` whose arrays live in host memory but refuse what CuPy's refuse, so the GPU tests
find, on a CPU, the faults a GPU run finds first.

- ``cupy.ndarray`` is not a ``numpy.ndarray``. Mixing one with a numpy array in a ufunc, an array
  function or a method raises CuPy's ``TypeError`` ("Unsupported type"), and an implicit
  conversion (``np.asarray(a)``) raises "Implicit conversion to a NumPy array is not allowed".
  ``cupy.asarray`` / ``cupy.asnumpy`` / ``.get()`` copy between the two, as a transfer, and so
  does an item assignment of a numpy value or index, as CuPy's does. It is stricter than CuPy in
  one place: a 0-d numpy array is refused in a comparison, where CuPy takes its item.
- Functions numpy has and CuPy lacks work here (CuPy raises): the code calls none today.
- Reductions and scalar indexing give 0-d device arrays, as CuPy's do, not numpy scalars.
- The fused kernels are the real generated CUDA C, built by ``fuser.cuda.emulate`` (g++ and the
  thread-index shim) and launched on the arrays' host buffers with the planned grid and block.

As a pytest plugin (``-p tests.gpu.strict_cupy``) it installs itself before collection, so the
``gpu``-marked tests run against it. Only ever installed in a process of its own.
"""

from __future__ import annotations

import math
import sys
import types
from typing import Any

import numpy as np


def _refuse(x: Any) -> None:
    raise TypeError(f"Unsupported type {type(x)}")


def _unwrap(x: Any) -> Any:
    """Device arrays as their host buffers, recursively through tuples and lists; a numpy array
    is refused, as CuPy refuses one."""
    if type(x) is ndarray:
        return x._a
    if isinstance(x, np.ndarray):
        _refuse(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v) for v in x)
    return x


def _wrap(r: Any) -> Any:
    if isinstance(r, np.ndarray):
        return ndarray(r)
    if isinstance(r, np.generic) and not isinstance(r, (np.str_, np.bytes_)):
        return ndarray(np.asarray(r))
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    if isinstance(r, list):
        return [_wrap(v) for v in r]
    return r


def _strict(fn: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    call.__name__ = getattr(fn, "__name__", "call")
    return call


class ndarray:  # noqa: N801 - CuPy's name
    """A device array: a host buffer behind CuPy's rules (see the module docstring)."""

    __slots__ = ("_a",)
    __array_priority__ = 100.0

    def __init__(self, a: np.ndarray):
        self._a = a

    # numpy's protocols: device arrays stay device arrays; numpy arrays are refused
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = _unwrap(out)
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _wrap(func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    # attributes and methods: numpy's, strict and wrapped
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # __array_interface__, __array_struct__: no host view
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            return _strict(attr)
        return _wrap(attr)

    @property
    def data(self) -> Any:
        return types.SimpleNamespace(ptr=self._a.ctypes.data)

    @property
    def device(self) -> Any:
        return cuda.Device(0)

    def get(self, stream: Any = None, out: Any = None) -> np.ndarray:
        return self._a.copy()

    def item(self) -> Any:
        return self._a.item()

    def tolist(self) -> Any:
        return self._a.tolist()

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        for row in self._a:
            yield _wrap(row)

    def __getitem__(self, index: Any) -> Any:
        return _wrap(self._a[_index(index)])

    def __setitem__(self, index: Any, value: Any) -> None:
        # CuPy copies a numpy value to the device here (as it does numpy index arrays)
        self._a[_index(index)] = value if isinstance(value, np.ndarray) else _unwrap(value)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __index__(self) -> int:
        return self._a.__index__()

    def __complex__(self) -> complex:
        return complex(self._a)

    def __repr__(self) -> str:
        return repr(self._a).replace("array(", "device_array(", 1)

    def __copy__(self) -> ndarray:
        return ndarray(self._a.copy())

    def __deepcopy__(self, memo: Any) -> ndarray:
        return ndarray(self._a.copy())

    def __reduce__(self) -> Any:
        return (ndarray, (self._a.copy(),))


def _index(index: Any) -> Any:
    """An index for the host buffer: device arrays unwrapped; numpy integer and boolean arrays
    taken as CuPy takes them (it copies them to the device)."""
    if type(index) is ndarray:
        return index._a
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    return index


def _binary(name: str) -> Any:
    ufunc = getattr(np, name)
    return lambda self, other: ufunc(self, other)


def _reflected(name: str) -> Any:
    ufunc = getattr(np, name)
    return lambda self, other: ufunc(other, self)


def _inplace(name: str) -> Any:
    ufunc = getattr(np, name)

    def op(self: ndarray, other: Any) -> ndarray:
        ufunc(self, other, out=self)
        return self
    return op


for _op, _uf in {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                 "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
                 "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
                 "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}.items():
    setattr(ndarray, f"__{_op}__", _binary(_uf))
    setattr(ndarray, f"__r{_op}__", _reflected(_uf))
    setattr(ndarray, f"__i{_op}__", _inplace(_uf))
for _op, _uf in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                 "eq": "equal", "ne": "not_equal"}.items():
    setattr(ndarray, f"__{_op}__", _binary(_uf))
for _op, _uf in {"neg": "negative", "pos": "positive", "abs": "absolute",
                 "invert": "invert"}.items():
    setattr(ndarray, f"__{_op}__", (lambda u: lambda self: u(self))(getattr(np, _uf)))
ndarray.__hash__ = None  # type: ignore[assignment]
ndarray.__module__ = "cupy"


# -- the module ----------------------------------------------------------------------------------
def asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """A host-to-device copy (a device array: itself when no conversion is asked for)."""
    if type(a) is ndarray:
        return a if dtype is None or a.dtype == np.dtype(dtype) else ndarray(a._a.astype(dtype))
    return ndarray(np.array(a, dtype=dtype, order=order or "K", copy=True))


def array(a: Any, dtype: Any = None, copy: bool = True, order: Any = "K", ndmin: int = 0
          ) -> ndarray:
    if type(a) is ndarray:
        return ndarray(np.array(a._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    return ndarray(np.array(a, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
    """A device-to-host copy."""
    if type(a) is ndarray:
        return a._a.copy()
    return np.asarray(a)


def ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    return ndarray(np.ascontiguousarray(_unwrap(a), dtype=dtype))


def get_array_module(*args: Any) -> Any:
    return sys.modules["cupy"] if any(type(a) is ndarray for a in args) else np


class _Proxy:
    """An object (numpy's random module, a Generator) whose calls are strict and wrapped."""

    def __init__(self, target: Any):
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if callable(attr) and not isinstance(attr, type):
            def call(*args: Any, **kwargs: Any) -> Any:
                r = attr(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
                return _Proxy(r) if isinstance(r, np.random.Generator) else _wrap(r)
            return call
        return attr


class _Device:
    def __init__(self, device: int | None = None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise RuntimeError(f"cudaErrorInvalidDevice: device {self.id} (one device here)")
        self.compute_capability = "90"

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def use(self) -> None:
        return None


class _Stream:
    ptr = 0

    def synchronize(self) -> None:
        return None


cuda = types.SimpleNamespace(
    Device=_Device,
    runtime=types.SimpleNamespace(
        getDeviceCount=lambda: 1, getDevice=lambda: 0, runtimeGetVersion=lambda: 13000,
        cudaDevAttrMultiProcessorCount=16,
        deviceGetAttribute=lambda attr, device: 2),
    get_current_stream=lambda: _Stream(),
    Stream=_Stream,
)


class _Ufunc:
    """A ufunc: its call and its methods (``at``, ``reduce``, ...) strict and wrapped."""

    def __init__(self, ufunc: np.ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _strict(self._ufunc)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ufunc, name)
        return _strict(attr) if callable(attr) else attr


class _CupyModule(types.ModuleType):
    """``cupy``: the functions above, and numpy's others made strict and wrapped."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(np, name)
        if isinstance(attr, np.ufunc):
            return _Ufunc(attr)
        if callable(attr) and not isinstance(attr, type):
            return _strict(attr)
        return attr


def _erf(x: Any) -> Any:
    return _wrap(np.vectorize(math.erf, otypes=[_unwrap(x).dtype])(_unwrap(x)))


def install() -> None:
    """Put the stand-in in ``sys.modules`` (``cupy``, ``cupyx.scipy.special``) and run the CUDA
    fuser's kernels through the emulation."""
    module = _CupyModule("cupy", __doc__)
    for name in ("ndarray", "asarray", "array", "asnumpy", "ascontiguousarray",
                 "get_array_module", "cuda"):
        setattr(module, name, globals()[name])
    module.random = _Proxy(np.random)
    module.__version__ = "0+strict"
    sys.modules["cupy"] = module
    special = types.ModuleType("cupyx.scipy.special")
    special.erf = _erf
    scipy = types.ModuleType("cupyx.scipy")
    scipy.special = special
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = scipy
    sys.modules.update({"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special})

    from fuser.cuda import emulate, kernel

    def load(self: Any, source: Any, device: int) -> Any:
        fn = emulate.build(source)

        def launch(grid: int, block: int, args: Any) -> None:
            fn(grid, block, *[a._a.ctypes.data if type(a) is ndarray else
                              (a.item() if isinstance(a, np.generic) else a) for a in args])
        return launch
    kernel.CupyRuntime.load = load


def pytest_configure(config: Any) -> None:
    install()
