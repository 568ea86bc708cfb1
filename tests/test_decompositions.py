"""`OpDef.decomposition` for every installed op that has one (ours, the example package's,
anyone's): run eagerly with om.ops it gives the kernel's result; expanded into a graph by
`onemodel.passes.decompose` the op's node is gone and the graph gives the same result. And the
mechanism itself, on an op that exists only in this test: ONNX export without a lowering,
nested decompositions, errors that name the op."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core.decompose import build, run_eager
from onemodel.core.interpreter import run_graph
from onemodel.core.types import TensorType
from onemodel.passes.decompose import decompose
from onemodel.registry import OpDef, Param, Sample, hookimpl
from onemodel.testing.samples import bind_sample, sample_graph


def _cases():
    rng = np.random.default_rng(0)
    for name, op in sorted(om.registry.ops().items()):
        if op.decomposition is None:
            continue
        for i, s in enumerate(op.samples(rng)):
            yield pytest.param(op, s, id=f"{name}-{s.name or i}")


CASES = list(_cases())


def test_some_ops_have_decompositions():
    assert {"group_norm", "normalize", "cosine_similarity", "rms_norm"} <= {
        c.values[0].name for c in CASES}


@pytest.mark.parametrize("op,sample", CASES)
def test_eager_decomposition_matches_the_kernel(op, sample):
    inputs, params = bind_sample(op, sample, np.float64)
    want = op.kernel(*[None if t is None else t.numpy() for t in inputs], **params)
    got = run_eager(op, inputs, params)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("op,sample", CASES)
def test_decomposed_graph_matches_the_kernel(op, sample):
    built = sample_graph(op, sample, np.float64)
    if built is None:
        pytest.skip("the op refuses to be a graph node with these params")
    graph, feeds = built
    want = run_graph(graph, feeds)
    expanded = decompose(graph)
    expanded.verify()
    assert op.name not in {n.op for n in expanded.nodes}
    got = run_graph(expanded, feeds)
    for k, w in want.items():
        np.testing.assert_allclose(got[k], w, rtol=1e-7, atol=1e-9)


# -- the mechanism, on ops only this test defines -----------------------------------------------
def _same(t, *_rest, **_params):
    return TensorType(t.dtype, t.shape)


def _record(name, decomposition, kernel, **kw):
    return OpDef(name=name, inputs=("x",), params={"k": Param(kind="float", default=2.0)},
                 kernel=kernel, infer=_same, vjp=None, decomposition=decomposition,
                 samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),))], **kw)


class _Plugin:
    @hookimpl
    def onemodel_ops(self):
        return (
            # axpy_one(x, k) = x * k + 1, built from basic ops
            _record("axpy_one", lambda ops, x, k: ops.add(ops.mul(x, k), 1.0),
                    lambda x, k: x * k + 1),
            # twice_axpy(x, k) = axpy_one(axpy_one(x, k), k): a decomposition naming another
            _record("twice_axpy", lambda ops, x, k: ops.axpy_one(ops.axpy_one(x, k=k), k=k),
                    lambda x, k: (x * k + 1) * k + 1),
            _record("broken_parts", lambda ops, x, k: ops.no_such_op(x),
                    lambda x, k: x.copy()),
        )


@pytest.fixture
def toy_ops(registered):
    registered(_Plugin(), "test-decompositions")


def _traced(fn):
    return om.trace(fn, om.Tensor.randn(om.DType.F32, 4, 3, seed=1), "batch", None)


def test_an_op_without_lowering_exports_through_its_decomposition(toy_ops, tmp_path):
    traced = _traced(lambda x: om.ops.twice_axpy(x, k=3.0))
    traced.save_onnx(tmp_path / "m.onnx")
    onnx = pytest.importorskip("onnx")
    types = [n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node]
    assert types == ["Mul", "Add", "Mul", "Add"]
    x = om.Tensor.randn(om.DType.F32, 7, 3, seed=2)  # the batch axis stayed symbolic
    want = (x.numpy() * 3 + 1) * 3 + 1
    np.testing.assert_allclose(om.load_onnx(tmp_path / "m.onnx")(x).numpy(), want, rtol=1e-6)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"input": x.numpy()})[0], want, rtol=1e-6)


def test_nested_decompositions_expand_fully_and_keep_symbolic_sizes(toy_ops):
    graph = _traced(lambda x: om.ops.twice_axpy(x, k=0.5)).graph
    sub = build(om.registry.get_op("twice_axpy"), [graph.inputs[0].type], {"k": 0.5})
    assert [n.op for n in sub.nodes] == ["axpy_one", "axpy_one"]
    expanded = decompose(graph)
    assert [n.op for n in expanded.nodes] == ["mul", "add", "mul", "add"]
    assert str(expanded.values[expanded.outputs[0][1]].type.shape[0]) == "batch"
    only_outer = decompose(graph, lambda op, node: op.name == "twice_axpy")
    assert [n.op for n in only_outer.nodes] == ["axpy_one", "axpy_one"]
    feeds = {"input": np.ones((5, 3), np.float32)}
    np.testing.assert_allclose(run_graph(expanded, feeds)["output"],
                               np.full((5, 3), 1.75, np.float32))


def test_a_decomposition_calling_an_unknown_op_is_named(toy_ops, tmp_path):
    traced = _traced(lambda x: om.ops.broken_parts(x))
    with pytest.raises(om.OneModelError, match="broken_parts.*no_such_op"):
        traced.save_onnx(tmp_path / "m.onnx")
    with pytest.raises(om.OneModelError, match="broken_parts.*no_such_op"):
        decompose(traced.graph)
    assert not (tmp_path / "m.onnx").exists()


def test_a_graph_without_decomposable_nodes_is_returned_as_is():
    graph = _traced(lambda x: x.relu()).graph
    assert decompose(graph) is graph
