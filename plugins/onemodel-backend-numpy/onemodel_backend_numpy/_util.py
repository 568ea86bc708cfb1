"""Helpers for the numpy kernels: output types from the op's own inference, pair params."""
from __future__ import annotations

from onemodel.core.dispatch import infer
from onemodel.core.plan import ConstantType
from onemodel.core.types import TensorType
from onemodel.registry import get_op


def out_type(op: str, params: dict, input_types: list) -> TensorType:
    """The (concrete) output type the op's inference gives for these inputs."""
    t = infer(get_op(op), list(input_types), dict(params))
    return t[0] if isinstance(t, (tuple, list)) else t


def const(t) -> object:
    """The array of a constant input, or None."""
    return t.value if isinstance(t, ConstantType) else None


def pair(v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return int(v[0]), int(v[0])
        return int(v[0]), int(v[1])
    return int(v), int(v)


def all_float_same(types, dtype=None) -> bool:
    ts = [t for t in types if t is not None]
    if not ts:
        return False
    d = dtype or ts[0].dtype
    return d.is_float and all(t.dtype == d for t in ts)
