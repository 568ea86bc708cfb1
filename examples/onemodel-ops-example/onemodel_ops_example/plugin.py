"""The entry point: one record per op (with its ONNX mapping), a numpy kernel and a pass."""
import attrs

from onemodel.registry import hookimpl

from .kernels import KERNELS
from .onnx_mapping import ONNX
from .passes import PASSES
from .rms_norm import RMS_NORM
from .swish import SWISH


@hookimpl
def onemodel_ops():
    return tuple(attrs.evolve(op, onnx=ONNX[op.name]) for op in (RMS_NORM, SWISH))


@hookimpl
def onemodel_kernels():
    return KERNELS


@hookimpl
def onemodel_passes():
    return PASSES
