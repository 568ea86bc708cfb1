"""Every row of tests/layer_rows.py (one per layer configuration) through the same checks: eager
against the numpy reference, gradients against finite differences, a trace with symbolic axes run
at other sizes on every backend, the ONNX round trip through ONNX Runtime, and (where torch is
installed) PyTorch's state_dict, outputs and repr."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import GradMode, Tensor
from onemodel.runtime.session import Session, backends

from .layer_rows import ROWS, Row

nn = om.nn
IDS = [r.id for r in ROWS]


def build(row: Row, seed: int = 0):
    """The layer with every float parameter and buffer drawn at random (not its init), so a
    reference that ignored one would fail."""
    om.manual_seed(seed)
    m = getattr(nn, row.name)(*row.args, **row.kwargs)
    rng = np.random.default_rng(seed + 1)
    for name, t in m.state_dict().items():
        data = t._data
        if not data.dtype.kind == "f":
            continue
        if name.endswith("running_var"):
            data[...] = rng.uniform(0.5, 1.5, data.shape)
        elif name.endswith("weight") and row.name.startswith("PReLU"):
            data[...] = rng.uniform(0.05, 0.5, data.shape)
        else:
            data[...] = rng.standard_normal(data.shape) * 0.5 + (1.0 if "weight" in name and
                                                                   "Norm" in row.name else 0.0)
    m.train(row.train)
    return m


def example(row: Row, shape=None, dtype=np.float64, seed: int = 2):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape or row.shape) * row.scale).astype(dtype)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_eager_matches_the_numpy_reference(row):
    m = build(row).double()
    x = example(row)
    got = m(Tensor.from_numpy(x)).numpy()
    want = np.asarray(row.ref(m, x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def _fd_loss(m, x, g):
    with GradMode.no_grad():
        return float((m(Tensor.from_numpy(x)).numpy() * g).sum())


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_gradients_match_finite_differences(row):
    m = build(row).double()
    x = example(row)
    xt = Tensor.from_numpy(x.copy()).requires_grad_()
    y = m(xt)
    g = np.random.default_rng(3).standard_normal(y.shape)
    (y * Tensor.from_numpy(g)).sum().backward()
    eps = 1e-6
    rng = np.random.default_rng(4)
    targets = [("input", x, xt.grad)] + [(n, p._data, p.grad) for n, p in m.named_parameters()]
    for name, data, grad in targets:
        assert grad is not None, f"{row.id}: no gradient for {name}"
        flat = data.reshape(-1)
        for i in rng.choice(flat.size, size=min(flat.size, 10), replace=False):
            old = flat[i]
            flat[i] = old + eps
            up = _fd_loss(m, x, g)
            flat[i] = old - eps
            down = _fd_loss(m, x, g)
            flat[i] = old
            fd = (up - down) / (2 * eps)
            got = grad.numpy().reshape(-1)[i]
            assert abs(got - fd) <= 1e-5 + 1e-4 * abs(fd), (row.id, name, i, got, fd)


def _traced(row):
    m = build(row)
    x = example(row, dtype=np.float32)
    return m, m.trace(Tensor.from_numpy(x), *row.axes)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_trace_runs_at_other_sizes_on_every_backend(row):
    if not row.traceable:
        with pytest.raises(om.TraceException, match="cannot be traced"):
            _traced(row)
        return
    m, traced = _traced(row)
    assert m.training is row.train  # tracing restores the mode
    m.eval()
    x2 = example(row, row.other_shape(), np.float32, seed=5)
    want = m(Tensor.from_numpy(x2)).numpy()
    name = traced.input_names[0]
    for backend in backends():
        with Session(traced, backend=backend) as session:
            got = session.run({name: x2})["output"].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=backend)


@pytest.mark.parametrize("row", [r for r in ROWS if r.onnx], ids=[r.id for r in ROWS if r.onnx])
def test_onnx_export_and_import_round_trip(row):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onemodel.core.interpreter import run_graph
    from onemodel.formats.onnx_export import to_onnx
    from onemodel.formats.onnx_import import from_onnx

    m, traced = _traced(row)
    m.eval()
    x2 = example(row, row.other_shape(), np.float32, seed=6)
    want = m(Tensor.from_numpy(x2)).numpy()
    model = to_onnx(traced.graph)
    name = traced.input_names[0]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {name: x2})[0], want, rtol=1e-4, atol=1e-5)
    back = run_graph(from_onnx(model), {name: x2})
    np.testing.assert_allclose(np.asarray(back["output"]), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_state_dict_outputs_and_repr_match_torch(row):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = getattr(torch.nn, row.name)(*row.args, **row.kwargs).double()
    with torch.no_grad():
        for name, t in tm.state_dict().items():
            if t.is_floating_point():
                t.copy_(torch.rand_like(t) + 0.5 if "var" in name else torch.randn_like(t))
    m = build(row, seed=9).double()
    ref_state = tm.state_dict()
    assert list(m.state_dict()) == list(ref_state)
    for k, v in m.state_dict().items():
        assert tuple(v.shape) == tuple(ref_state[k].shape), k
    m.load_state_dict(ref_state)  # torch tensors, as they are
    assert repr(m) == repr(tm)
    tm.train(row.train)
    m.train(row.train)
    x = example(row)
    want = tm(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(m(Tensor.from_numpy(x)).numpy(), want, rtol=1e-7, atol=1e-9)
    for k, v in m.state_dict().items():  # running statistics moved alike in training
        np.testing.assert_allclose(np.asarray(v), ref_state[k].numpy(), rtol=1e-7, atol=1e-9,
                                   err_msg=k)
    again = getattr(torch.nn, row.name)(*row.args, **row.kwargs).double()
    again.load_state_dict({k: torch.from_numpy(np.asarray(v).copy())
                           for k, v in m.state_dict().items()})
    for k, v in again.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), np.asarray(m.state_dict()[k]))
