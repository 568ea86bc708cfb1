"""A backend-specific kernel: `swish` for the numpy backend, writing into the plan's buffer.

Without it the op would still run in every backend through its eager kernel; this one only
saves the temporaries (the plan hands it a preassigned ``out`` buffer).
"""
from __future__ import annotations

import numpy as np

from onemodel.core import DType
from onemodel.core.plan import OUT, PlanKernel
from onemodel.registry import KernelDef


def make_swish(params, input_types):
    beta = float(params.get("beta", 1.0))
    if not input_types[0].dtype.is_float or input_types[0].dtype == DType.F16:
        return None  # fall back to the eager kernel (float16 is computed there in float32)

    def swish(x, out):
        np.multiply(x, -0.5 * beta, out=out)  # sigmoid(z) = 0.5 * (1 + tanh(z / 2))
        np.tanh(out, out=out)
        np.subtract(1.0, out, out=out)  # tanh is odd: 1 + tanh(z/2) = 1 - tanh(-z/2)
        np.multiply(out, 0.5, out=out)
        np.multiply(out, x, out=out)
        return out

    return PlanKernel(swish, OUT)


KERNELS = (KernelDef(op="swish", backend="numpy", make=make_swish,
                     doc="swish into the plan's buffer, no temporaries"),)
