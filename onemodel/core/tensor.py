"""`Tensor`: a numpy array with autograd and tracing. Every computation goes through op records;
the class itself knows operator protocols (``__add__`` ...) but no op by name."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..errors import ArgumentError, OneModelError, OpError
from ..registry import REGISTRY
from . import autograd, foreign, tensor_habits, tracing_hooks
from .dispatch import apply
from .dtype import DType
from .grad_mode import GradMode
from .random import generator
from .symint import SymInt, has_symint
from .size_tensors import size_from_tensor
from .tensor_methods import TensorMeta, sync


def _shape_args(shape: tuple, what: str) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(size_from_tensor(d, f"{what}: shape[{i}]") if isinstance(d, Tensor) else d
                  for i, d in enumerate(shape))
    for d in shape:
        if isinstance(d, SymInt):
            continue
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0:
            raise OpError(f"{what}: shape entries must be non-negative ints, got {shape!r}")
    return tuple(d if isinstance(d, SymInt) else int(d) for d in shape)


def _fill_value(value, dtype: DType, what: str):
    """A factory's fill value: a number that fits ``dtype`` (PyTorch refuses inf or 300 for
    int8 instead of wrapping around)."""
    if isinstance(value, SymInt):
        return value
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise ArgumentError(f"{what}: value must be a number, got {value!r:.60}")
    if dtype == DType.BOOL:
        return value
    if dtype.is_float:
        if not _in_float_range(value):
            raise ArgumentError(f"{what}: value {value!r:.60} is beyond any float")
        return value
    info = np.iinfo(dtype.numpy)
    if not (_in_float_range(value) and math.isfinite(value) and info.min <= value <= info.max):
        raise ArgumentError(f"{what}: value {value!r:.60} does not fit dtype {dtype} "
                            f"({info.min}..{info.max})")
    return value


def _number(value, what: str, name: str):
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, SymInt):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentError(f"{what}: {name} must be a number, got {value!r:.60}")
    if not (_in_float_range(value) and math.isfinite(value)):
        raise ArgumentError(f"{what}: {name} must be finite, got {value!r:.60}")
    return value


def _in_float_range(value) -> bool:
    try:
        float(value)
    except OverflowError:  # an int beyond 1.8e308
        return False
    return True


def _dtype_first(dtype, shape: tuple, what: str) -> DType:
    """The factory's dtype, or a message showing the call when a size came first (PyTorch's
    ``torch.zeros(2, 3)`` habit)."""
    if isinstance(dtype, (tuple, list, SymInt)) or (
            isinstance(dtype, numbers.Integral) and not isinstance(dtype, (bool, np.bool_))):
        sizes = ", ".join(map(repr, (dtype, *shape)))
        rest = "the range" if what == "arange" else "the shape"
        raise ArgumentError(f"Tensor.{what}({sizes}): the dtype comes first, then {rest}, "
                            f"e.g. Tensor.{what}(DType.F32, {sizes})")
    return DType.parse(dtype)


def _caster(dtype: DType, name: str):
    def cast(self) -> "Tensor":
        return self.to(dtype)

    cast.__name__, cast.__qualname__ = name, f"Tensor.{name}"
    cast.__doc__ = f"This tensor as {dtype} (PyTorch's ``x.{name}()``); ``x.to({dtype!r})``."
    return cast


#: PyTorch's casting methods and the DType each gives.
CASTS = {"half": DType.F16, "float": DType.F32, "double": DType.F64, "char": DType.I8,
         "short": DType.I16, "int": DType.I32, "long": DType.I64, "byte": DType.U8,
         "bool": DType.BOOL}


def _protocol_op(name: str):
    entry = REGISTRY.tables().methods.get(name)
    if entry is None:
        raise OneModelError(f"no installed plugin provides the Tensor protocol {name!r} "
                            f"(install onemodel-ops-basic)")
    return entry[1]


class Tensor(metaclass=TensorMeta):
    """An n-dimensional array with a dtype, autograd and tracing support.

    Methods such as ``reshape``, ``sum`` or ``add_`` come from the installed op records and are
    added to this class when the registry loads (see ``tensor_methods``)."""

    __slots__ = ("_data", "_node", "_out_index", "requires_grad", "grad", "_version", "_tv",
                 "__weakref__")
    __array_ufunc__ = None  # numpy defers to our reflected operators: np_array + tensor -> Tensor

    def __init__(self, data: Any, dtype: DType | None = None, requires_grad: bool = False):
        arr = data._data if isinstance(data, Tensor) else _to_array(data, dtype)
        self._data = arr
        self._node = None
        self._out_index = 0
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self._version = 0
        self._tv = None
        if requires_grad and not self.dtype.is_float:
            raise OpError(f"only floating-point tensors can require gradients, not {self.dtype}")

    @classmethod
    def _wrap(cls, arr: np.ndarray) -> "Tensor":
        t = cls.__new__(cls)
        t._data = arr
        t._node = None
        t._out_index = 0
        t.requires_grad = False
        t.grad = None
        t._version = 0
        t._tv = None
        return t

    @classmethod
    def _from_data(cls, data: Any, dtype: DType | None = None) -> "Tensor":
        return cls._wrap(_to_array(data, dtype))

    # -- factories (dtype first, then the shape) ---------------------------------------------------
    @classmethod
    def _factory(cls, dtype, value, shape, what):
        dtype = _dtype_first(dtype, shape, what)
        shape = _shape_args(shape, f"Tensor.{what}")
        value = _fill_value(value, dtype, f"Tensor.{what}")
        tracer = tracing_hooks.current()
        if tracer is not None:
            return apply(_protocol_op("__full__"), (), {"shape": shape, "value": value, "dtype": dtype})
        return cls._wrap(np.full(shape, value, dtype=dtype.numpy))

    @classmethod
    def zeros(cls, dtype, *shape) -> "Tensor":
        return cls._factory(dtype, 0, shape, "zeros")

    @classmethod
    def ones(cls, dtype, *shape) -> "Tensor":
        return cls._factory(dtype, 1, shape, "ones")

    @classmethod
    def full(cls, dtype, value, *shape) -> "Tensor":
        if isinstance(dtype, (tuple, list)) or (isinstance(dtype, numbers.Integral)
                                                and not isinstance(dtype, (bool, np.bool_))):
            given = ", ".join(map(repr, (dtype, value, *shape)))
            raise ArgumentError(f"Tensor.full({given}): the dtype comes first, then the value, "
                                f"then the shape, e.g. Tensor.full(DType.F32, 0.5, 2, 3)")
        return cls._factory(dtype, value, shape, "full")

    @classmethod
    def arange(cls, dtype, start=None, stop=None, step=1) -> "Tensor":
        dtype = _dtype_first(dtype, tuple(v for v in (start, stop) if v is not None), "arange")
        if start is None:
            raise ArgumentError("Tensor.arange: give the end (and optionally start and step) "
                                "after the dtype: Tensor.arange(DType.I64, 5)")
        if stop is None:
            start, stop = 0, start
        start, stop, step = (_number(v, "Tensor.arange", n)
                             for v, n in ((start, "start"), (stop, "stop"), (step, "step")))
        if tracing_hooks.current() is not None:
            # always an op while recording (as the other factories), so the trace check's eager
            # re-run calls the same ops as the graph even when the bounds are plain ints there
            entry = REGISTRY.tables().methods.get("__arange__")
            if entry is not None:
                return apply(entry[1], (), {"start": start, "stop": stop, "step": step,
                                            "dtype": dtype})
            if has_symint((start, stop, step)):
                next(v for v in (start, stop, step) if isinstance(v, SymInt))._refuse("Tensor.arange")
        if step == 0:
            raise OpError("Tensor.arange: step must not be zero")
        return cls._wrap(np.arange(start, stop, step).astype(dtype.numpy))

    @classmethod
    def _random(cls, what, draw, dtype, shape, seed):
        dtype = _dtype_first(dtype, shape, what)
        tracer = tracing_hooks.current()
        if not dtype.is_float:
            raise OpError(f"Tensor.{what}: dtype must be a float type, got {dtype}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise ArgumentError(f"Tensor.{what}: seed must be an int or None, got {seed!r:.60}")
        shape = _shape_args(shape, f"Tensor.{what}")
        t = cls._wrap(draw(generator(seed), shape).astype(dtype.numpy))
        if tracer is not None:  # fine as an example; refused if it becomes a graph constant
            tracer.note_random(t, f"Tensor.{what}")
        return t

    @classmethod
    def randn(cls, dtype, *shape, seed: int | None = None) -> "Tensor":
        return cls._random("randn", lambda g, s: g.standard_normal(s), dtype, shape, seed)

    @classmethod
    def rand(cls, dtype, *shape, seed: int | None = None) -> "Tensor":
        return cls._random("rand", lambda g, s: g.random(s), dtype, shape, seed)

    @classmethod
    def from_list(cls, values, *shape, dtype=None) -> "Tensor":
        """Flat values and a shape, or nested lists when no shape is given."""
        arr = _to_array(values, DType.parse(dtype) if dtype is not None else None)
        if shape:
            shape = _shape_args(shape, "Tensor.from_list")
            if arr.size != int(np.prod(shape)):
                raise OpError(f"Tensor.from_list: {arr.size} values do not fill shape {shape}")
            arr = arr.reshape(shape)
        return cls._wrap(arr)

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> "Tensor":
        """Wrap a numpy array (no copy where its dtype is supported as it is)."""
        if foreign.is_torch_tensor(array):  # t.numpy() as it is: no copy either
            array = foreign.as_array(array, "Tensor.from_numpy(array): array")
        if not isinstance(array, np.ndarray):
            raise OpError(f"Tensor.from_numpy expects a numpy array, got "
                          f"{foreign.type_name(array)}")
        DType.from_numpy(array.dtype)
        return cls._wrap(array)

    # -- properties --------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        if self._tv is not None:
            tracer = tracing_hooks.current()
            if tracer is not None:
                return tracer.shape_of(self)
        return self._data.shape

    @property
    def dtype(self) -> DType:
        return DType.from_numpy(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    # numel, len, iteration, view, size, .T, to(device)...: PyTorch's habits, in tensor_habits

    # -- data ---------------------------------------------------------------------------------------
    def _read(self, what: str) -> None:
        if self._tv is not None:
            tracer = tracing_hooks.current()
            if tracer is not None:
                tracer.refuse(f"Tensor.{what}", "reading a traced tensor's data makes Python "
                              "decide with the example's values, which the graph cannot record")

    def numpy(self) -> np.ndarray:
        self._read("numpy")
        return self._data

    def __array__(self, dtype=None, copy=None):
        self._read("__array__")
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self):
        self._read("item")
        if self._data.size != 1:
            raise OpError(f"Tensor.item() needs exactly one element, this tensor has shape "
                          f"{self._data.shape}")
        return self._data.reshape(()).item()

    def tolist(self):
        self._read("tolist")
        return self._data.tolist()

    def __bool__(self) -> bool:
        self._read("__bool__")
        if self._data.size != 1:
            raise OpError(f"the truth value of a tensor with {self._data.size} elements is "
                          f"ambiguous; reduce it first: x.any() or x.all()")
        return bool(self._data)

    def __float__(self) -> float:
        self._read("__float__")
        return float(self.item())

    def __int__(self) -> int:
        self._read("__int__")
        return int(self.item())

    def __index__(self) -> int:
        self._read("__index__")
        if self.dtype.is_float or self._data.size != 1:
            raise OpError("only an integer tensor with one element can be used as an index")
        return int(self.item())

    # -- autograd -----------------------------------------------------------------------------------
    def backward(self, grad=None, retain_graph: bool = False) -> None:
        if tracing_hooks.current() is not None:
            tracing_hooks.current().refuse("Tensor.backward", "training steps cannot be traced")
        if not self.requires_grad:
            raise autograd.AutogradError("backward() on a tensor that does not require grad: "
                                         "no input of its computation had requires_grad=True")
        if grad is None:
            if self._data.size != 1:
                raise autograd.AutogradError(
                    f"backward() without a gradient needs a single-element tensor; this one has "
                    f"shape {self._data.shape}: pass grad= of the same shape")
            g = np.ones_like(self._data)
        else:
            g = grad._data if isinstance(grad, Tensor) else np.asarray(grad, dtype=self._data.dtype)
            if g.shape != self._data.shape:
                raise autograd.AutogradError(f"backward(grad): grad has shape {g.shape}, the "
                                             f"tensor {self._data.shape}")
        autograd.backward(self, g, retain_graph=retain_graph)

    def detach(self) -> "Tensor":
        t = Tensor._wrap(self._data)
        t._tv = self._tv
        return t

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not self.dtype.is_float:
            raise OpError(f"only floating-point tensors can require gradients, not {self.dtype}")
        self.requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    # -- in place ---------------------------------------------------------------------------------
    def _inplace(self, op, args: tuple, kwargs: dict, what: str) -> "Tensor":
        tracer = tracing_hooks.current()
        if tracer is not None:
            tracer.refuse(f"Tensor.{what}", "changing a tensor in place inside a trace would "
                          "change module state or hide a data dependency; use the out-of-place op")
        recording = GradMode.is_enabled()
        if recording and self.requires_grad and self._node is None:
            raise OpError(f"Tensor.{what}: a leaf tensor that requires grad cannot be changed in "
                          f"place while autograd records; wrap it in om.GradMode.no_grad()")
        src = self
        if recording and (self.requires_grad or any(getattr(a, "requires_grad", False)
                                                    for a in args)):
            src = Tensor._wrap(self._data.copy())  # autograd keeps the old values, not the buffer
            src._node, src._out_index, src.requires_grad = self._node, self._out_index, self.requires_grad
        out = apply(op, (src,) + tuple(args), kwargs)
        if out._data.shape != self._data.shape:
            raise OpError(f"Tensor.{what}: the result has shape {out._data.shape}, which cannot "
                          f"be written into a tensor of shape {self._data.shape}")
        try:
            np.copyto(self._data, out._data, casting="unsafe")
        except ValueError as exc:
            raise OpError(f"Tensor.{what}: this tensor's memory is read-only ({exc})") from None
        self._version += 1
        if out._node is not None:
            self._node, self._out_index, self.requires_grad = out._node, out._out_index, True
        return self

    def __setitem__(self, key, value) -> None:
        mask = _bool_mask(key)
        if mask is not None:  # x[x > 0] = 0: the op that provides the __setitem_mask__ protocol
            self._inplace(_protocol_op("__setitem_mask__"), (mask, value), {}, "__setitem__")
            return
        op = _protocol_op("__setitem__")
        self._inplace(op, (value,), {"index": _normalize_index(key)}, "__setitem__")

    def __getitem__(self, key) -> "Tensor":
        mask = _bool_mask(key)
        if mask is not None:  # x[x > 0]: data-dependent, through the __getitem_mask__ protocol
            return apply(_protocol_op("__getitem_mask__"), (self, mask), {})
        return apply(_protocol_op("__getitem__"), (self,), {"index": _normalize_index(key)})

    # -- methods from op records -----------------------------------------------------------------
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        sync(Tensor)
        if name in Tensor.__dict__:
            return object.__getattribute__(self, name)
        entry = REGISTRY.tables().methods.get(name)
        if entry is None:
            import difflib

            known = {m for m in REGISTRY.tables().methods if not m.startswith("_")}
            known.update(m for m in dir(Tensor) if not m.startswith("_"))
            close = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise AttributeError(f"'Tensor' object has no attribute {name!r}{hint}")
        kind, op = entry
        if kind == "inplace":
            return lambda *args, **kwargs: self._inplace(op, args, kwargs, name)
        return lambda *args, **kwargs: apply(op, (self,) + _pack_method_args(op, args), kwargs)

    def __dir__(self):
        sync(Tensor)
        names = set(super().__dir__())
        names.update(m for m in REGISTRY.tables().methods if not m.startswith("__"))
        return sorted(names)

    def _op(self, dunder: str, *args):
        return apply(_protocol_op(dunder), (self,) + args, {})

    def _rop(self, dunder: str, other):
        entry = REGISTRY.tables().methods.get(dunder)
        if entry is None:
            return NotImplemented
        return apply(entry[1], (other, self), {})

    def __add__(self, o): return self._op("__add__", o)
    def __radd__(self, o): return self._rop("__radd__", o)
    def __sub__(self, o): return self._op("__sub__", o)
    def __rsub__(self, o): return self._rop("__rsub__", o)
    def __mul__(self, o): return self._op("__mul__", o)
    def __rmul__(self, o): return self._rop("__rmul__", o)
    def __truediv__(self, o): return self._op("__truediv__", o)
    def __rtruediv__(self, o): return self._rop("__rtruediv__", o)
    def __floordiv__(self, o): return self._op("__floordiv__", o)
    def __rfloordiv__(self, o): return self._rop("__rfloordiv__", o)
    def __mod__(self, o): return self._op("__mod__", o)
    def __rmod__(self, o): return self._rop("__rmod__", o)
    def __pow__(self, o): return self._op("__pow__", o)
    def __rpow__(self, o): return self._rop("__rpow__", o)
    def __matmul__(self, o): return self._op("__matmul__", o)
    def __rmatmul__(self, o): return self._rop("__rmatmul__", o)
    def __neg__(self): return self._op("__neg__")
    def __abs__(self): return self._op("__abs__")
    def __lt__(self, o): return self._op("__lt__", o)
    def __le__(self, o): return self._op("__le__", o)
    def __gt__(self, o): return self._op("__gt__", o)
    def __ge__(self, o): return self._op("__ge__", o)
    def __eq__(self, o): return self._op("__eq__", o)
    def __ne__(self, o): return self._op("__ne__", o)
    __hash__ = object.__hash__

    def __iadd__(self, o): return self._inplace(_protocol_op("__add__"), (o,), {}, "__iadd__")
    def __isub__(self, o): return self._inplace(_protocol_op("__sub__"), (o,), {}, "__isub__")
    def __imul__(self, o): return self._inplace(_protocol_op("__mul__"), (o,), {}, "__imul__")

    def __repr__(self) -> str:
        body = np.array2string(self._data, separator=", ", precision=4, threshold=50,
                               prefix="tensor(")
        extra = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({body}, dtype={self.dtype}{extra})"

    __str__ = __repr__



tensor_habits.install(Tensor)
for _name, _dtype in CASTS.items():  # after the class: in its body they would shadow builtins
    setattr(Tensor, _name, _caster(_dtype, _name))


def _pack_method_args(op, args: tuple) -> tuple:
    """``x.reshape(3, -1)`` as well as ``x.reshape((3, -1))``: pack varargs into a shape/axes."""
    n_extra = len(op.inputs) - 1
    pnames = list(op.params)
    if n_extra == 0 and pnames and op.params[pnames[0]].kind in ("shape", "axes") and len(args) > 1:
        if all(isinstance(a, (numbers.Integral, SymInt)) and not isinstance(a, (bool, np.bool_))
               for a in args):  # x.sum(1, True) is axis=1, keepdims=True, not axes (1, True)
            return (tuple(args),)
        if op.params[pnames[0]].kind == "shape" and all(
                isinstance(a, (numbers.Integral, SymInt, Tensor))
                and not isinstance(a, (bool, np.bool_)) for a in args):
            return (tuple(args),)  # x.reshape(lengths.sum(), -1): a 0-d tensor as a size
    return args


def _bool_mask(key):
    """The mask of boolean-mask indexing (a bool Tensor or numpy array as the whole key), or
    None."""
    if isinstance(key, Tensor) and key.dtype == DType.BOOL:
        return key
    if isinstance(key, np.ndarray) and key.dtype == np.bool_:
        return Tensor.from_numpy(key)
    return None


def _normalize_index(key) -> tuple:
    """A canonical, serialisable index: ints, ("slice", start, stop, step), None, "..."."""
    if not isinstance(key, tuple):
        key = (key,)
    out: list[Any] = []
    for k in key:
        if k is None or k is Ellipsis:
            out.append(None if k is None else "...")
        elif isinstance(k, slice):
            out.append(("slice", k.start, k.stop, k.step))
        elif isinstance(k, SymInt) or (isinstance(k, numbers.Integral) and not isinstance(k, bool)):
            out.append(k if isinstance(k, SymInt) else int(k))
        elif isinstance(k, Tensor):
            raise OpError("indexing with an integer tensor is not supported by []; use ops.take "
                          "(numpy's take) or ops.gather; a bool mask works alone: x[mask]")
        else:
            raise OpError(f"unsupported index {k!r}: use ints, slices, None and ...")
    return tuple(out)


def _to_array(data: Any, dtype: DType | None) -> np.ndarray:
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray):
        arr = data
    elif foreign.is_torch_tensor(data):  # keeps torch's dtype, as a numpy array would
        arr = foreign.as_array(data, "making a tensor from it: the data")
    else:
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as exc:
            raise OpError(f"cannot make a tensor from {type(data).__name__}: {exc}") from None
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32)  # Python floats default to f32, as in PyTorch
        elif arr.dtype.kind in "iu" and dtype is None:
            arr = arr.astype(np.int64)
        elif arr.dtype == object or arr.dtype.kind in "USV":
            raise OpError(f"cannot make a tensor from {data!r:.60}: values must be numbers")
    if dtype is not None:
        arr = arr.astype(DType.parse(dtype).numpy, copy=False)
    else:
        DType.from_numpy(arr.dtype)
    return arr


def tensor(data: Any, dtype=None, requires_grad: bool = False) -> Tensor:
    """A new tensor from lists, numpy arrays or scalars (floats default to f32, ints to i64)."""
    if isinstance(data, Tensor):
        data = data._data.copy()
    elif isinstance(data, np.ndarray):
        data = data.copy()  # a new tensor, as torch.tensor: never aliases the caller's array
    return Tensor(data, DType.parse(dtype) if dtype is not None else None, requires_grad)
