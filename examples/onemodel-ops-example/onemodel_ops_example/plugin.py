"""The entry point: one record per op (with its ONNX mapping), a numpy kernel and a pass."""
from onemodel.formats.onnx_api import attach_onnx
from onemodel.registry import hookimpl

from .kernels import KERNELS
from .onnx_mapping import ONNX
from .passes import PASSES
from .rms_norm import RMS_NORM
from .swish import SWISH


@hookimpl
def onemodel_ops():
    # a mapping naming an op this package does not define raises, naming both
    return attach_onnx((RMS_NORM, SWISH), ONNX, plugin="onemodel-ops-example")


@hookimpl
def onemodel_kernels():
    return KERNELS


@hookimpl
def onemodel_passes():
    return PASSES
