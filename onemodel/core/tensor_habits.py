"""PyTorch's Tensor habits that are not ops of their own: iterating and unpacking over axis 0,
``view``, ``size()``, ``dim()``, ``.T`` / ``.mT`` / ``t()``, ``new_zeros`` and friends, the
``*_as`` methods, ``numel()``, and ``to('cpu')`` / ``cpu()``.

Each is written with the public Tensor methods that mirror ops (``reshape``, ``permute``,
``expand``, ``transpose``, API.md), so it records, differentiates and traces exactly as those
do; the core still names no op. `install` puts them on the Tensor class (after it is made, so
``Tensor.__dict__`` holds them and the registry's generated methods never shadow them).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import ArgumentError, OpError, OpIndexError
from .dtype import DType
from .symint import SymInt

#: torch's device types; a string naming one (``"cuda"``, ``"cuda:1"``) is a device, not a dtype.
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "xla", "meta", "hip", "ipu", "hpu", "mtia",
                "vulkan", "opengl", "ve", "fpga", "lazy", "privateuseone")


class Numel(int):
    """``x.numel``: the number of elements as an int (the documented property) that can also be
    called (PyTorch's ``x.numel()``), returning the same plain int."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return int.__repr__(self)


class SymNumel(SymInt):
    """``x.numel`` of a traced tensor with a symbolic axis: a symbolic size, callable too."""

    __slots__ = ()

    def __call__(self) -> SymInt:
        return SymInt(self.expr, self.hint)


def numel(self):
    n = 1
    for d in self.shape:
        n = n * d
    if isinstance(n, SymInt):
        return SymNumel(n.expr, n.hint)
    return Numel(n)


# -- iteration -------------------------------------------------------------------------------------
def _length(self, what: str, hint: str):
    if not self.ndim:
        raise ArgumentError(f"{what} of a 0-d tensor: it has no axis 0; use x.item() for its "
                            f"value")
    n = self.shape[0]
    if isinstance(n, SymInt):
        n._refuse(what, hint=hint)
    return n


def length(self) -> int:
    return _length(self, "len()", "use x.shape[0], which stays symbolic")


def iterate(self):
    """The slices ``x[0], x[1], ...`` along axis 0, as iterating a torch tensor gives."""
    n = _length(self, "iterating (or unpacking) a tensor over its axis 0",
                "the number of items depends on the symbolic size, so a Python loop or "
                "unpacking cannot be recorded; use ops on the whole tensor (x[i] with a fixed i, "
                "om.ops.split, reductions), or trace with that axis fixed")
    return (self[i] for i in range(n))


# -- shape methods -------------------------------------------------------------------------------
def view(self, *shape):
    """``x.view(2, -1)``: PyTorch's view is a reshape here (every result shares the data when
    numpy can; `numpy()` is the way to see memory). ``x.view(dtype)`` reads the bytes as another
    dtype: the ``bitcast`` method, where an installed op provides it."""
    if len(shape) == 1 and _is_dtype_like(shape[0]):
        try:
            bitcast = self.bitcast
        except AttributeError:
            raise ArgumentError(f"Tensor.view({shape[0]!r}): reinterpreting the bytes as "
                                f"another dtype needs a `bitcast` op, and none is installed; "
                                f"use x.to(dtype) to convert the values") from None
        return bitcast(DType.parse(shape[0]))
    return self.reshape(*shape)


def _is_dtype_like(v) -> bool:
    return isinstance(v, (DType, str, type, np.dtype))


def size(self, dim=None):
    """``x.size()`` is the shape, ``x.size(d)`` one size (symbolic in a trace, as ``shape``)."""
    shape = self.shape
    if dim is None:
        return shape
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise ArgumentError(f"Tensor.size(dim): dim must be an int, got {dim!r:.60}")
    n = len(shape)
    if not -n <= dim < n:
        raise OpIndexError(f"Tensor.size({dim}): dimension out of range for a tensor of rank {n} "
                           f"(expected {-n}..{n - 1})" if n else
                           f"Tensor.size({dim}): a 0-d tensor has no dimensions")
    return shape[dim]


def dim(self) -> int:
    return self.ndim


def contiguous(self, memory_format=None):
    """The tensor itself: results are laid out as numpy keeps them, and nothing in OneModel
    depends on strides."""
    return self


def T(self):
    """The axes reversed (a matrix transposed, a vector unchanged), numpy's and PyTorch's ``.T``;
    no deprecation for other ranks."""
    if self.ndim < 2:
        return self
    return self.permute(tuple(range(self.ndim - 1, -1, -1)))


def mT(self):
    """The last two axes swapped (a batch of matrices transposed)."""
    if self.ndim < 2:
        raise ArgumentError(f"Tensor.mT needs at least 2 dimensions, this tensor has "
                            f"{self.ndim}")
    return self.transpose(-2, -1)


def t(self):
    """PyTorch's ``t()``: a matrix transposed; 0-d and 1-D tensors as they are."""
    if self.ndim > 2:
        raise ArgumentError(f"Tensor.t() expects a tensor with <= 2-D, this one has "
                            f"{self.ndim} dimensions: use x.transpose(a, b), x.mT or x.permute")
    return T(self)


# -- new_* and *_as -------------------------------------------------------------------------------
def _new(self, value, size, dtype, requires_grad: bool):
    """A new tensor of ``size`` filled with ``value``, this tensor's dtype unless ``dtype``."""
    from .tensor import Tensor

    dtype = self.dtype if dtype is None else DType.parse(dtype)
    t = Tensor.full(dtype, value, *size)
    return t.requires_grad_() if requires_grad else t


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of ``size`` with this tensor's dtype (or ``dtype``)."""
    _device(device, "Tensor.new_zeros")
    return _new(self, 0, size, dtype, requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """Ones of ``size`` with this tensor's dtype (or ``dtype``)."""
    _device(device, "Tensor.new_ones")
    return _new(self, 1, size, dtype, requires_grad)


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    """``fill_value`` everywhere in ``size``, with this tensor's dtype (or ``dtype``)."""
    _device(device, "Tensor.new_full")
    size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    return _new(self, fill_value, size, dtype, requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """A new tensor from ``data`` (copied), with this tensor's dtype (or ``dtype``)."""
    from .tensor import tensor

    _device(device, "Tensor.new_tensor")
    return tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


def _other(other, what: str):
    from .tensor import Tensor

    if not isinstance(other, Tensor):
        raise ArgumentError(f"Tensor.{what}(other): other must be a Tensor, got "
                            f"{type(other).__name__}")
    return other


def expand_as(self, other):
    return self.expand(_other(other, "expand_as").shape)


def view_as(self, other):
    return self.reshape(_other(other, "view_as").shape)


def reshape_as(self, other):
    return self.reshape(_other(other, "reshape_as").shape)


def type_as(self, other):
    return self.to(_other(other, "type_as").dtype)


# -- devices ---------------------------------------------------------------------------------------
def _device_name(value):
    """The device a ``to`` argument names (a str or torch.device), or None when it names none."""
    if type(value).__name__ == "device" and type(value).__module__.startswith("torch"):
        return str(value)
    if isinstance(value, str) and value.split(":", 1)[0].strip().lower() in DEVICE_TYPES:
        return value
    return None


def _device(value, what: str) -> None:
    """Accept the CPU (OneModel's only device); refuse any other, naming it."""
    if value is None:
        return
    name = _device_name(value)
    if name is None:
        raise ArgumentError(f"{what}: device must be a device name such as 'cpu', got "
                            f"{value!r:.60}")
    if name.split(":", 1)[0].strip().lower() != "cpu":
        raise OpError(f"{what}: device {name!r}: OneModel runs only on the CPU (its tensors are "
                      f"numpy arrays); leave the device out, or pass 'cpu'")


def to(self, *args, dtype=None, device=None, non_blocking=False):
    """PyTorch's ``to``: ``x.to(dtype)``, ``x.to(other_tensor)`` (its dtype), ``x.to('cpu')``
    (this tensor itself: the CPU is the only device), ``x.to('cpu', dtype)``. Another device
    (``'cuda'``) is an error naming it; ``non_blocking`` changes nothing. Casting goes through
    the op that provides the Tensor protocol ``__cast__``."""
    from .tensor import Tensor, _protocol_op
    from .dispatch import apply

    if len(args) > 2:
        raise ArgumentError(f"Tensor.to takes a device, a dtype or a tensor (and a dtype after a "
                            f"device), got {len(args)} arguments")
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        if dtype is not None or len(rest) > 1:
            raise ArgumentError("Tensor.to(other): give either a tensor or a dtype, not both")
        dtype = rest.pop(0).dtype
    elif rest and _device_name(rest[0]) is not None:
        if device is not None:
            raise ArgumentError("Tensor.to: the device is given twice")
        device = rest.pop(0)
    if rest:
        if dtype is not None:
            raise ArgumentError("Tensor.to: the dtype is given twice")
        dtype = rest.pop(0)
    _device(device, "Tensor.to")
    if dtype is None:
        return self
    return apply(_protocol_op("__cast__"), (self, DType.parse(dtype)), {})


def cpu(self, memory_format=None):
    """The tensor itself: OneModel's tensors always live on the CPU."""
    return self


METHODS = {"view": view, "size": size, "dim": dim, "contiguous": contiguous, "t": t,
           "new_zeros": new_zeros, "new_ones": new_ones, "new_full": new_full,
           "new_tensor": new_tensor, "expand_as": expand_as, "view_as": view_as,
           "reshape_as": reshape_as, "type_as": type_as, "to": to, "cpu": cpu,
           "__iter__": iterate, "__len__": length}
PROPERTIES = {"T": T, "mT": mT, "numel": numel}


def install(cls) -> None:
    for name, fn in METHODS.items():
        fn.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(cls, name, property(fn, doc=fn.__doc__))
