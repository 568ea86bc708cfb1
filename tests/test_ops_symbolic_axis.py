"""The ops PyTorch users reach for (issue 23), traced with a symbolic batch axis: the traced
graph runs at other batch sizes on every installed backend and, exported to ONNX, in ONNX
Runtime, and each agrees with the eager op at that size. (tests/test_ops_generic.py traces
every op's samples with fixed sizes; this is the symbolic-size half.)"""
from __future__ import annotations

import math

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core import Dim
from onemodel.runtime.session import backends as installed_backends
from onemodel.formats.onnx_export import to_onnx
from onemodel.formats.onnx_import import from_onnx

ops = om.ops

#: name -> (function of one tensor, example shape without the batch axis, input dtype)
CASES = {
    "cumsum_batch": (lambda x: ops.cumsum(x, dim=0), (4,), np.float32),
    "cumsum_row": (lambda x: x.cumsum(-1), (4,), np.float32),
    "cumprod_batch": (lambda x: ops.cumprod(x, 0), (3,), np.float32),
    "logsumexp": (lambda x: ops.logsumexp(x, dim=0), (3,), np.float32),
    "var": (lambda x: x.var(dim=0), (3,), np.float32),
    "std_keepdim": (lambda x: x.std(dim=(0, 1), keepdim=True, correction=0), (3,), np.float32),
    "norm": (lambda x: x.norm(dim=0), (3,), np.float32),
    "norm_inf": (lambda x: ops.norm(x, p=math.inf), (3,), np.float32),
    "amax": (lambda x: x.amax(dim=0), (3,), np.float32),
    "amin": (lambda x: x.amin(dim=-1), (3,), np.float32),
    "prod": (lambda x: x.prod(dim=0), (3,), np.float32),
    "argmin": (lambda x: x.argmin(dim=0), (3,), np.float32),
    "sort_batch": (lambda x: x.sort(dim=0, descending=True), (3,), np.float32),
    "argsort": (lambda x: x.argsort(dim=0), (3,), np.float32),
    "topk_row": (lambda x: x.topk(2, dim=1), (4,), np.float32),
    "stack_batch": (lambda x: ops.stack([x, x * 2.0], dim=1), (3,), np.float32),
    "unbind_fixed": (lambda x: x.unbind(1), (3,), np.float32),
    "chunk_fixed": (lambda x: x.chunk(2, dim=1), (4,), np.float32),
    "flip_batch": (lambda x: x.flip(0), (3,), np.float32),
    "roll_batch": (lambda x: x.roll(1, 0), (3,), np.float32),
    "roll_flat": (lambda x: x.roll(-2), (3,), np.float32),
    "repeat": (lambda x: x.repeat(2, 1, 3), (3,), np.float32),
    "tile": (lambda x: x.tile((2,)), (3,), np.float32),
    "pad_batch": (lambda x: ops.pad(x, (0, 1, 1, 1), value=-1.0), (3,), np.float32),
    "pad_reflect": (lambda x: ops.pad(x, (1, 1, 1, 1), mode="reflect"), (3,), np.float32),
    "pad_replicate": (lambda x: ops.pad(x, (2, 0, 0, 3), mode="replicate"), (3,), np.float32),
    "movedim": (lambda x: x.movedim(0, -1), (3, 2), np.float32),
    "unflatten": (lambda x: x.unflatten(1, (2, -1)), (4,), np.float32),
    "masked_fill": (lambda x: x.masked_fill(x > 0, -5.0), (3,), np.float32),
    "index_select_batch": (lambda x: x.index_select(0, Tensor.from_numpy(np.array([1, 0, 1]))),
                           (3,), np.float32),
    "index_select_fixed": (lambda x: x.index_select(-1, Tensor.from_numpy(np.array([2, 0]))),
                           (3,), np.float32),
    "narrow_batch": (lambda x: x.narrow(0, 1, 1), (3,), np.float32),
    "narrow_fixed": (lambda x: x.narrow(1, 1, 2), (3,), np.float32),
    "bmm": (lambda x: ops.bmm(x, x.transpose(1, 2)), (3, 4), np.float32),
    "outer": (lambda x: ops.outer(x.sum(1), x.sum(0)), (3,), np.float32),
    "one_hot": (lambda x: ops.one_hot((x > 0).long(), num_classes=2), (3,), np.float32),
    "ones_like": (lambda x: ops.ones_like(x) + x, (3,), np.float32),
    "full_like": (lambda x: ops.full_like(x, 2.5) * x, (3,), np.float32),
    "linspace": (lambda x: x + ops.linspace(0, 1, 3), (3,), np.float32),
    "scatter": (lambda x: x.scatter(1, x.argsort(dim=1), x * 2.0), (3,), np.float32),
    "scatter_add": (lambda x: ops.scatter_add(ops.zeros_like(x), 1, (x > 0).long(), x), (3,),
                    np.float32),
    "diag_read": (lambda x: ops.diag(x), (3,), np.float32),
    "diag_read_above": (lambda x: ops.diag(x, 1), (3,), np.float32),
    "diag_build": (lambda x: ops.diag(x.sum(1), -1), (3,), np.float32),
    "einsum_outer": (lambda x: ops.einsum([x, x], "bi,bj->bij"), (3,), np.float32),
    "einsum_reduce": (lambda x: ops.einsum([x, x * 2.0], "bi,bi->b"), (3,), np.float32),
    "einsum_ellipsis": (lambda x: ops.einsum([x], "...i->..."), (3,), np.float32),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=0), (3,), np.float32),
    "repeat_interleave_flat": (lambda x: x.repeat_interleave(3), (3,), np.float32),
}

SIZES = (2, 5)


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("name", CASES)
def test_traced_with_a_symbolic_batch(name):
    fn, shape, dtype = CASES[name]
    rng = np.random.default_rng(len(name))
    example = Tensor.from_numpy(rng.standard_normal((7, *shape)).astype(dtype))
    traced = om.trace(fn, example, "batch", *([None] * len(shape)))
    graph = traced.graph
    assert any(isinstance(d, Dim) for d in graph.inputs[0].shape)
    for n in SIZES:
        x = rng.standard_normal((n, *shape)).astype(dtype)
        want = [w.numpy() for w in _flat(fn(Tensor.from_numpy(x)))]
        for backend in installed_backends():
            with om.Session(graph, backend=backend) as session:
                got = session.run({graph.inputs[0].name: x})
            for w, o in zip(want, traced.output_names):
                g = got[o].numpy()
                assert g.shape == w.shape and g.dtype == w.dtype, (backend, n, o)
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{backend} at batch {n}")


@pytest.mark.parametrize("name", CASES)
def test_exported_with_a_symbolic_batch_runs_in_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime")
    fn, shape, dtype = CASES[name]
    rng = np.random.default_rng(len(name))
    example = Tensor.from_numpy(rng.standard_normal((7, *shape)).astype(dtype))
    traced = om.trace(fn, example, "batch", *([None] * len(shape)))
    model = to_onnx(traced.graph)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    back = from_onnx(model)
    for n in SIZES:
        x = rng.standard_normal((n, *shape)).astype(dtype)
        want = [w.numpy() for w in _flat(fn(Tensor.from_numpy(x)))]
        got = sess.run(None, {sess.get_inputs()[0].name: x})
        for w, g in zip(want, got):
            assert g.shape == w.shape and g.dtype == w.dtype, n
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"batch {n}")
        with om.Session(back) as session:
            res = session.run({back.inputs[0].name: x})
        for w, o in zip(want, [o.name for o in sess.get_outputs()]):
            np.testing.assert_allclose(res[o].numpy(), w, rtol=1e-5, atol=1e-6)
