"""Arrays of other libraries given where a Tensor is expected: a torch tensor, a JAX or CuPy
array, anything with numpy's ``__array__`` protocol.

A CPU torch tensor that does not require grad is taken as its numpy view (``t.numpy()``: no copy,
as ``Tensor.from_numpy``), without importing torch. What cannot carry over is refused, saying how
to convert: a torch tensor that requires grad (OneModel's autograd cannot reach torch's graph,
so gradients would silently stop there), one on another device, a dtype numpy lacks (bfloat16).
"""
from __future__ import annotations

import numpy as np

from ..errors import OpError


def type_name(value) -> str:
    """``torch.Tensor`` rather than ``Tensor``: the module says whose type it is."""
    cls = type(value)
    module = cls.__module__.split(".")[0]
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def is_torch_tensor(value) -> bool:
    return any(c.__module__.split(".")[0] == "torch" and c.__name__ == "Tensor"
               for c in type(value).__mro__)


def is_array_like(value) -> bool:
    return is_torch_tensor(value) or hasattr(type(value), "__array__")


def as_array(value, what: str) -> np.ndarray:
    """``value`` as a numpy array, or an OpError naming ``what`` and saying how to convert."""
    name = type_name(value)
    if is_torch_tensor(value):
        if getattr(value, "requires_grad", False):
            raise OpError(f"{what} is a torch.Tensor that requires grad: OneModel's autograd "
                          f"cannot follow torch's graph. Pass t.detach() for the values, or "
                          f"om.tensor(t.detach().numpy(), requires_grad=True) for a OneModel "
                          f"leaf of your own")
        device = str(getattr(value, "device", "cpu"))
        if not device.startswith("cpu"):
            raise OpError(f"{what} is a torch.Tensor on {device!r}: OneModel runs on the CPU; "
                          f"move it with t.cpu() (then om.tensor(t.numpy()) or pass it as is)")
        how = "t.float().numpy()"  # the case left: a dtype numpy lacks, such as bfloat16
    else:
        how = "np.asarray(value)"
    try:
        arr = np.asarray(value.numpy() if is_torch_tensor(value) else value)
    except Exception as exc:  # noqa: BLE001 - the library's own reason, reported with ours
        raise OpError(f"{what}: cannot read the {name} as a numpy array ({type(exc).__name__}: "
                      f"{exc}); convert it first, e.g. om.tensor({how})") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise OpError(f"{what}: the {name} holds {arr.dtype} values, not numbers")
    return arr
