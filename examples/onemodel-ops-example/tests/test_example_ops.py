"""The example package's own tests: its ops work eagerly, with gradients, in traces and sessions
(`onemodel.testing.check_op` does the per-op checks), and its pass and kernel are used."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.testing import check_op


def reference_rms_norm(x, w=None, eps=1e-6):
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        row = x[idx]
        out[idx] = row / np.sqrt((row ** 2).sum() / row.size + eps)
    return out if w is None else out * w


def reference_swish(x, beta=1.0):
    return x / (1.0 + np.exp(-beta * x))


def test_ops_are_registered_by_this_package():
    ops = om.registry.ops()
    assert ops["rms_norm_last"].provider.startswith("onemodel-ops-example")
    assert ops["swish"].provider.startswith("onemodel-ops-example")


def test_eager_matches_reference():
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    w = np.linspace(0.5, 1.5, 5).astype(np.float32)
    np.testing.assert_allclose(om.ops.rms_norm_last(Tensor.from_numpy(x), Tensor.from_numpy(w)).numpy(),
                               reference_rms_norm(x, w), rtol=1e-5)
    np.testing.assert_allclose(Tensor.from_numpy(x).swish(beta=2.0).numpy(), reference_swish(x, 2.0),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,reference", [("rms_norm_last", reference_rms_norm),
                                            ("swish", reference_swish)])
def test_each_op_passes_the_test_kit(name, reference):
    """onemodel.testing.check_op runs every sample of the record: the kernel against the
    reference above, inference against eager, the gradient against float64 finite differences,
    a trace, a session on every installed backend and the ONNX round trip."""
    report = check_op(name, reference=reference)
    ran = {c.check for c in report.passed}
    assert {"reference", "inference", "gradient", "trace", "sessions"} <= ran, str(report)


_SCALE = Tensor.from_numpy(np.linspace(0.5, 1.5, 6).astype(np.float32))


def model(x, w=_SCALE):
    return om.ops.rms_norm_last(x.swish(), w)


@pytest.mark.parametrize("backend", om.backends() if hasattr(om, "backends") else ["numpy"])
@pytest.mark.parametrize("level", ["none", "basic", "all"])
def test_traces_and_runs_in_every_backend(backend, level):
    traced = om.trace(model, Tensor.randn(DType.F32, 4, 6, seed=2), "batch", None)
    assert {n.op for n in traced.graph.nodes} >= {"rms_norm_last", "swish"}
    x = Tensor.randn(DType.F32, 9, 6, seed=3)
    with traced.create_session(backend=backend, optimization=level) as session:
        got = session.run({"input": x})["output"]
    np.testing.assert_allclose(got.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_onnx_round_trip(tmp_path):
    traced = om.trace(model, Tensor.randn(DType.F32, 4, 6, seed=2), "batch", None)
    traced.save_onnx(tmp_path / "m.onnx")
    back = om.load_onnx(tmp_path / "m.onnx")
    x = Tensor.randn(DType.F32, 5, 6, seed=4)
    np.testing.assert_allclose(back(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {"input": x.numpy()})
    np.testing.assert_allclose(out, model(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [21, 24])
def test_onnx_export_uses_standard_ops_by_opset(tmp_path, opset):
    onnx = pytest.importorskip("onnx")
    traced = om.trace(model, Tensor.randn(DType.F32, 4, 6, seed=2), "batch", None)
    traced.save_onnx(tmp_path / "m.onnx", opset=opset)
    types = {n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node}
    if opset >= 24:
        assert {"RMSNormalization", "Swish"} <= types
        back = om.load_onnx(tmp_path / "m.onnx")  # RMSNormalization reads as OneModel's rms_norm
        assert {n.op for n in back.graph.nodes} >= {"rms_norm", "swish"}
    else:  # below opset 23, rms_norm_last goes through its decomposition
        assert "Sigmoid" in types and {"ReduceMean", "Sqrt", "Div"} <= types
    x = Tensor.randn(DType.F32, 3, 6, seed=6)
    np.testing.assert_allclose(om.load_onnx(tmp_path / "m.onnx")(x).numpy(), model(x).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_fold_swish_pass_fires_and_keeps_results():
    def primitive(x):
        return x * x.sigmoid()

    traced = om.trace(primitive, Tensor.randn(DType.F32, 4, 6, seed=2), "batch", None)
    assert [n.op for n in traced.graph.nodes] == ["sigmoid", "mul"]
    with traced.create_session(optimization="all") as s:
        assert [n.op for n in s.optimized_graph.nodes] == ["swish"]
        x = Tensor.randn(DType.F32, 7, 6, seed=8)
        np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), primitive(x).numpy(),
                                   rtol=1e-5, atol=1e-6)
    with traced.create_session(optimization="all", disabled=["fold_swish"]) as s:
        assert "swish" not in [n.op for n in s.optimized_graph.nodes]


def test_fold_swish_pass_leaves_other_products_alone():
    from onemodel_ops_example.passes import fold_swish

    def other(x):
        return (x + 1.0) * x.sigmoid()

    graph = om.trace(other, Tensor.randn(DType.F32, 4, 6, seed=2), "batch", None).graph
    assert fold_swish(graph) is graph


def test_numpy_backend_uses_the_package_kernel():
    kernels = om.registry.kernels()
    assert ("numpy", "swish") in kernels
    assert kernels[("numpy", "swish")].provider.startswith("onemodel-ops-example")


def test_the_decomposition_matches_the_kernel():
    x = Tensor.randn(DType.F32, 3, 6, seed=5)
    w = Tensor.randn(DType.F32, 6, seed=6)
    rec = om.registry.get_op("rms_norm_last")
    got = rec.decomposition(om.ops, x, w, eps=1e-6)
    np.testing.assert_allclose(got.numpy(), om.ops.rms_norm_last(x, w).numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("backend", [None, *(om.backends() if hasattr(om, "backends")
                                            else ["numpy"])])
def test_float16_is_computed_in_float32_and_rounded_once(backend):
    """A float16 sigmoid then a float16 product rounds twice; ONNX's references (and torch's
    half SiLU) compute in float32 and round once: every element within half a float16 ulp of
    the exact value, give or take float32's error (1e-4 relative where 1 + tanh cancels)."""
    x = np.linspace(-6, 6, 4001).astype(np.float16)
    exact = reference_swish(x.astype(np.float64), 1.3)
    if backend is None:
        got = Tensor.from_numpy(x).swish(beta=1.3).numpy()
    else:
        traced = om.trace(lambda t: t.swish(beta=1.3), Tensor.from_numpy(x[:4]), "n")
        with traced.create_session(backend=backend) as session:
            got = session.run({"input": Tensor.from_numpy(x)})["output"].numpy()
    assert got.dtype == np.float16
    err = np.abs(got.astype(np.float64) - exact)
    half_ulp = 0.5 * np.spacing(np.abs(got)).astype(np.float64)
    bad = err > half_ulp * 1.001 + 1e-4 * np.abs(exact)
    assert not bad.any(), (x[bad], got[bad], exact[bad])
