"""The ``elementwise_chain`` kernel, built from the steps' pointwise formulas (their records'
`OpTraits.pointwise`): one generated function computing the whole chain in the output buffer,
with ``out=`` ufuncs wherever the formula allows. A third-party pointwise op fuses the same way
as a built-in one; a step without a formula runs its own kernel and is copied into the buffer."""
from __future__ import annotations

from onemodel.core.plan import OUT, PlanKernel
from onemodel.core.pointwise import NAMESPACE
from onemodel.registry import KernelDef, get_op
from onemodel.registry.formula import substitute

from ._util import all_float_same
from .formula_code import Lowering

ACC = -1


def _chain_make(params, types):
    steps = params["steps"]
    if not all_float_same(types):
        return None
    ins = [f"i{j}" for j in range(len(types))]
    low = Lowering("out")
    ns = dict(NAMESPACE)
    for k, (op_name, args, sparams) in enumerate(steps):
        op = get_op(op_name)
        operands = ["out" if j == ACC else ins[j] for j in args]
        pw = op.traits.pointwise
        tree = pw.expression(op.inputs, dict(sparams)) if pw is not None else None
        if tree is None:  # no formula for this application: the op's own kernel
            ns[f"k{k}"], ns[f"p{k}"] = op.kernel, dict(sparams)
            low.line(f"np.copyto(out, k{k}({', '.join(operands)}, **p{k}))", set(operands),
                      True)
            continue
        names = [i.rstrip("?") for i in op.inputs]
        low.emit(substitute(tree, dict(zip(names, operands))), "out")
    source = (f"def chain({', '.join(ins)}, out):\n"
              + "".join(f"    {line}\n" for line in low.lines) + "    return out\n")
    ns.update(low.constants)
    exec(source, ns)  # noqa: S102 - generated from checked formula trees
    # The output buffer may be an input's only if no input is read once the output is written.
    return PlanKernel(ns["chain"], OUT, inplace=not low.reads_after_first_write(set(ins)))


KERNELS = (KernelDef(op="elementwise_chain", backend="numpy", make=_chain_make,
                     doc="the whole chain from its steps' formulas, in the output buffer"),)
