"""`Parameter`: a Tensor that a module registers as trainable when assigned as an attribute."""
from __future__ import annotations

import numpy as np

from ..core.dtype import DType
from ..core.tensor import Tensor, _to_array
from ..errors import OpError


class Parameter(Tensor):
    """A trainable tensor (``requires_grad=True``). It shares memory with the tensor it wraps.

    Assigning one to an attribute of an `NnModule` registers it in ``parameters()`` and
    ``state_dict()``. Results of ops on a Parameter are plain Tensors.
    """

    __slots__ = ()  # keeps Tensor's slot layout: no per-instance __dict__

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            arr = np.zeros((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            arr = data._data
        else:
            arr = _to_array(data, None)
        Tensor.__init__(self, arr, None, False)
        if requires_grad and not DType.from_numpy(arr.dtype).is_float:
            raise OpError(f"Parameter: only floating-point tensors can require gradients, "
                          f"not {DType.from_numpy(arr.dtype)}")
        self.requires_grad = bool(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


__all__ = ["Parameter"]
