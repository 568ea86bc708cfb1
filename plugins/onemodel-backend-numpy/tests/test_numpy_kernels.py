"""Every kernel this plugin registers agrees with the op's own kernel on the op's samples, in
float32 and float64, including when the plan writes it over a dying input (in place)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core.dispatch import bind, infer
from onemodel.core.graph import GraphBuilder
from onemodel.core.interpreter import run_graph
from onemodel.core.types import TensorType
from onemodel_backend_numpy import plugin


def _cases():
    ops = om.registry.ops()
    for k in plugin.onemodel_kernels():
        op = ops.get(k.op)
        if op is None:
            continue
        for i, s in enumerate(op.samples(np.random.default_rng(0))):
            for dt in (np.float32, np.float64):
                yield pytest.param(op, s, dt, id=f"{k.op}-{s.name or i}-{np.dtype(dt).name}")


@pytest.mark.parametrize("op,sample,dtype", list(_cases()))
def test_kernel_matches_the_op(op, sample, dtype):
    flat = []
    for a in sample.args:
        flat.extend(a if isinstance(a, list) else [a])
    arrays = [None if a is None else np.asarray(a) for a in flat]
    arrays = [a.astype(dtype) if a is not None and a.dtype.kind == "f" else a for a in arrays]
    tensors = [None if a is None else om.Tensor.from_numpy(a) for a in arrays]
    if op.variadic:
        inputs, params = bind(op, (tensors,), dict(sample.params))
    else:
        names = [i.rstrip("?*") for i in op.inputs]
        inputs, params = bind(op, (), {**dict(zip(names, tensors)), **dict(sample.params)})
    if op.trace_refusal(params):
        pytest.skip("not a graph op with these params")
    types = [None if t is None else TensorType(t.dtype, t.shape) for t in inputs]
    outs = infer(op, types, params)
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    for const_weights in (False, True):
        gb = GraphBuilder()
        names, feeds = [], {}
        for j, t in enumerate(inputs):
            if t is None:
                names.append(None)
                continue
            nm = f"in{j}"
            if const_weights and j > 0:
                gb.add_initializer(nm, np.array(t.numpy()))
            else:
                # feed through an identity-like op so the plan owns (and may reuse) the buffer
                gb.add_input(nm, TensorType(t.dtype, t.shape))
                feeds[nm] = np.array(t.numpy())
            names.append(nm)
        vals = gb.add_node(op.name, names, outs, params)
        graph = gb.finish([(f"out{i}", v.name) for i, v in enumerate(vals)])
        want = run_graph(graph, feeds)
        got = om.Session(graph, optimization="none").run(feeds)
        tol = 2e-5 if dtype == np.float32 else 1e-10
        for k, w in want.items():
            assert got[k].dtype.numpy == w.dtype and got[k].shape == w.shape
            np.testing.assert_allclose(got[k].numpy(), w, rtol=tol, atol=tol)
