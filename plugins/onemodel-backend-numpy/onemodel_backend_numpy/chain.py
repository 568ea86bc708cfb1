"""The ``elementwise_chain`` kernel: the steps become one generated function computing the
whole chain in the output buffer with in-place ufuncs (no temporaries)."""
from __future__ import annotations

import numpy as np

from onemodel.core.plan import OUT, PlanKernel
from onemodel.registry import KernelDef, get_op

from ._util import all_float_same
from .elementwise import BINARY_UFUNCS, UNARY_UFUNCS, sigmoid_into

ACC = -1


def _chain_make(params, types):
    steps = params["steps"]
    if not all_float_same(types):
        return None
    ns = {"np": np, "sigmoid_into": sigmoid_into, "copyto": np.copyto}
    lines = [f"def chain({', '.join(f'i{j}' for j in range(len(types)))}, out):"]
    for k, (op, args, sparams) in enumerate(steps):
        names = ["out" if j == ACC else f"i{j}" for j in args]
        sparams = dict(sparams)
        if op in BINARY_UFUNCS and not sparams:
            ns[f"u{k}"] = BINARY_UFUNCS[op]
            lines.append(f"    u{k}({names[0]}, {names[1]}, out=out)")
        elif op in UNARY_UFUNCS and not sparams:
            ns[f"u{k}"] = UNARY_UFUNCS[op]
            lines.append(f"    u{k}({names[0]}, out=out)")
        elif op == "relu":
            ns["zero"] = np.zeros((), types[0].dtype.numpy)
            lines.append(f"    np.maximum({names[0]}, zero, out=out)")
        elif op == "sigmoid":
            lines.append(f"    sigmoid_into({names[0]}, out)")
        elif op == "clip" and set(sparams) <= {"min", "max"}:
            lo, hi = sparams.get("min"), sparams.get("max")
            lines.append(f"    np.clip({names[0]}, {lo!r}, {hi!r}, out=out)")
        else:  # any other elementwise op: its own kernel, copied into the buffer
            ns[f"k{k}"] = get_op(op).kernel
            ns[f"p{k}"] = sparams
            lines.append(f"    copyto(out, k{k}({', '.join(names)}, **p{k}))")
    lines.append("    return out")
    exec("\n".join(lines) + "\n", ns)  # noqa: S102 - generated from the step table
    # Overwriting an input is safe only if no step after the first reads an input.
    later = {j for _, args, _ in steps[1:] for j in args if j != ACC}
    return PlanKernel(ns["chain"], OUT, inplace=not later)


KERNELS = (KernelDef(op="elementwise_chain", backend="numpy", make=_chain_make,
                     doc="the whole chain in place in the output buffer"),)
