"""Broadcasting elementwise ops: one record each."""
from __future__ import annotations

import numpy as np

from onemodel.registry import OpDef, Sample

from ._common import binary_infer, cast_to, common, same_infer


def _add(a, b):
    dt = common(a, b)
    return np.add(cast_to(a, dt), cast_to(b, dt))


def _add_samples(rng):
    yield Sample(args=(rng.standard_normal((3, 4)), rng.standard_normal((3, 4))), name="same")
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.standard_normal((4,))), name="broadcast")
    yield Sample(args=(rng.standard_normal((3, 1)), rng.standard_normal((1, 4))), name="outer")


add = OpDef(
    name="add", inputs=("a", "b"), kernel=_add, infer=binary_infer("add"),
    vjp=lambda ctx, g: (g, g), samples=_add_samples,
    methods=("add", "__add__"), reflected=("__radd__",), inplace=("add_",),
    doc="a + b with broadcasting.",
)


def _relu(x):
    return np.maximum(x, 0).astype(x.dtype, copy=False)


relu = OpDef(
    name="relu", inputs=("x",), kernel=_relu, infer=same_infer,
    vjp=lambda ctx, g: (g * (ctx.inputs[0] > 0),),
    samples=lambda rng: [Sample(args=(rng.standard_normal((3, 5)) + 0.05,))],
    methods=("relu",), doc="max(x, 0).",
)

OPS = (add, relu)
