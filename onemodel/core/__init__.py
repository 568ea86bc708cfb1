"""Tensors, autograd, grad mode, symbolic sizes, the graph IR and the plans that run graphs
(sessions, which also use the passes and the formats, are in `onemodel.runtime`)."""
from .dtype import DType, promote_types
from .grad_mode import GradMode
from .random import manual_seed
from .symbolic import Dim
from .tensor import Tensor, tensor
from .types import TensorType, broadcast_shapes, normalize_axis

__all__ = ["DType", "promote_types", "GradMode", "manual_seed", "Dim", "Tensor", "tensor",
           "TensorType", "broadcast_shapes", "normalize_axis"]
