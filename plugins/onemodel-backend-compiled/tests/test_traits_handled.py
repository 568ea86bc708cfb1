"""Issue 26: the compiled backend learns what it may do with an op from the op's record.

Every op of the project's plugins that claims a trait the backend acts on is handled:

* an ``epilogue``: each sample's params give a kind the convolution's epilogue has, and the
  activation reading a convolution (and a linear, for the kinds a GEMM has) is applied in its
  tiles (no instruction of its own), with the numpy backend's values;
* a ``view`` of kind reshape, permute or expand: every float32 sample runs as a view (no
  instruction, no numpy step) with numpy's values, int64 ones stay native; a ``slice`` view has
  a lowering record of its own.
"""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core.graph import GraphBuilder
from onemodel.core.types import TensorType
from onemodel.registry.records import EPILOGUE_KINDS
from onemodel_backend_compiled import lowerings
from onemodel_backend_compiled import program as P
from onemodel_backend_compiled.traits import full_params
from tests.project_plugins import is_project

RTOL, ATOL = 1e-4, 1e-5


def _project_ops(pred):
    return sorted(n for n, op in om.registry.ops().items() if is_project(op.provider) and pred(op))


EPILOGUE_OPS = _project_ops(lambda op: op.traits.epilogue is not None)
VIEW_OPS = _project_ops(lambda op: op.traits.view is not None)


class _Ctx:  # what `full_params` reads
    def __init__(self):
        self.ops = om.registry.ops()


def _epilogue_params(name):
    """Each sample's params (with the op's defaults) and the epilogue they give."""
    op = om.registry.ops()[name]
    out = []
    for s in op.samples(np.random.default_rng(26)):
        params = full_params(_Ctx(), name, dict(s.params))
        out.append((dict(s.params), op.traits.epilogue_of(params)))
    return out


def test_the_epilogue_ops_are_the_activations():
    assert {"relu", "sigmoid", "tanh", "gelu", "clip", "hardswish", "hardsigmoid", "silu",
            "swish"} <= set(EPILOGUE_OPS)
    assert set(EPILOGUE_KINDS) <= set(P.CONV_ACTIVATIONS), "a kind no convolution applies"


@pytest.mark.parametrize("name", EPILOGUE_OPS)
def test_an_epilogue_op_is_applied_in_the_tiles_of_a_conv_and_a_gemm(name):
    rng = np.random.default_rng(26)
    w = Tensor.from_numpy(rng.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.3)
    b = Tensor.from_numpy(rng.standard_normal(6).astype(np.float32))
    wl = Tensor.from_numpy(rng.standard_normal((7, 5)).astype(np.float32) * 0.5)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32) * 2      # the implicit GEMM
    x_big = rng.standard_normal((1, 3, 12, 12)).astype(np.float32) * 2  # the direct kernel
    xl = rng.standard_normal((3, 5)).astype(np.float32) * 2
    fn = getattr(om.ops, name)
    judged = 0
    for params, ep in _epilogue_params(name):
        if ep is None:  # these params have no epilogue form (clip without bounds)
            continue
        assert ep[0] in P.CONV_ACTIVATIONS, (name, ep)
        def conv(t, p=params):
            return fn(om.ops.conv2d(t, w, b, padding=1), **p)

        cases = [(conv, x), (conv, x_big)]
        if ep[0] in P.ACTIVATIONS and ep[1:] == (0.0, 0.0):
            cases.append((lambda t, p=params: fn(om.ops.linear(t, wl), **p), xl))
        for f, arr in cases:
            traced = om.trace(f, Tensor.from_numpy(arr))
            s = om.Session(traced, backend="compiled", optimization="none")
            src = s.plan_source({"input": arr})
            assert " 0 on numpy" in src and f" {name} -> %" not in src, (params, src)
            want = om.Session(traced, backend="numpy", optimization="none").run(
                {"input": arr})["output"].numpy()
            np.testing.assert_allclose(s.run({"input": arr})["output"].numpy(), want,
                                       rtol=RTOL, atol=ATOL, err_msg=f"{name} {params}")
            judged += 1
    assert judged, f"{name}: no sample has an epilogue"


def _view_graph(name, arr, params):
    op = om.registry.ops()[name]
    ref = op.kernel(arr, **params)
    if isinstance(ref, (tuple, list)):  # several outputs (split)
        return None, None
    ref = np.asarray(ref)
    gb = GraphBuilder()
    gb.add_input("x", TensorType(om.DType.from_numpy(arr.dtype), arr.shape))
    out, = gb.add_node(name, ["x"], [TensorType(om.DType.from_numpy(ref.dtype), ref.shape)],
                       params)
    return gb.finish([("y", out.name)]), ref


@pytest.mark.parametrize("name", VIEW_OPS)
def test_a_view_op_runs_as_a_view(name):
    op = om.registry.ops()[name]
    table = lowerings.table(om.registry.REGISTRY.tables())
    assert name in table, f"{name} claims view={op.traits.view!r} but has no lowering"
    if op.traits.view == "slice":
        assert ("compiled", name) in om.registry.kernels(), name
    judged = 0
    for s in op.samples(np.random.default_rng(26)):
        if len(s.args) != 1 or np.asarray(s.args[0]).dtype.kind not in "fi":
            continue
        for dtype in (np.float32, np.int64):
            arr = np.asarray(s.args[0]).astype(dtype)
            graph, ref = _view_graph(name, arr, dict(s.params))
            if graph is None or ref.dtype != dtype or ref.size == 0:  # empty: never native
                continue
            sess = om.Session(graph, backend="compiled", optimization="none")
            src = sess.plan_source({"x": arr})
            assert "1 native node(s), 0 on numpy" in src, (s.name, dtype, src)
            if op.traits.view != "slice":
                assert "native segment" not in src, (s.name, src)  # strides only
            np.testing.assert_array_equal(sess.run({"x": arr})["y"].numpy(), ref,
                                          err_msg=f"{name} {s.name} {dtype}")
            judged += 1
    if name != "split":  # a tuple of outputs: judged in test_text_glue / the model tests
        assert judged, f"{name}: no sample judged"
