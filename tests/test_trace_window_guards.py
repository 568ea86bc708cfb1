"""Windows over symbolic axes (issue 22): a convolution or pooling window that must fit in its
input is a guard of the graph, so the trace check skips the sizes it does not allow and every
session, on every backend and optimization level, refuses them with the same `SessionError`
naming the input, the axis and the smallest size allowed, before any backend runs."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, SessionError, Tensor
from onemodel.registry import REGISTRY

F32 = DType.F32
LEVELS = ("none", "basic", "all")


def randn(*shape, seed=0):
    return Tensor.randn(F32, *shape, seed=seed)


def backends():
    """Every installed backend, from the registry (third-party ones included)."""
    return sorted(REGISTRY.tables().backends)


W1 = randn(3, 2, 1, 3, seed=1)
W2 = randn(3, 3, 1, 3, seed=2)


def conv1d_stack(x):
    """Two unpadded stride-2 Conv1d layers (kernel 3) over (N, C, L), as conv2d over H = 1."""
    h = om.ops.conv2d(x.unsqueeze(2), W1, stride=(1, 2))
    h = om.ops.conv2d(h.relu(), W2, stride=(1, 2))
    return h.squeeze(2).transpose(1, 2)


def smallest_length(fn, upto=64):
    """The shortest length at which ``fn`` runs eagerly (the independent reference)."""
    for n in range(1, upto):
        try:
            fn(randn(2, 2, n))
            return n
        except om.OneModelError:
            continue
    raise AssertionError("no length works")


def test_conv1d_stack_traces_with_the_default_check():
    traced = om.trace(conv1d_stack, randn(2, 2, 20), None, None, "seq")
    assert traced.graph.guards                            # the windows are guarded
    for n in (7, 8, 21):
        x = randn(2, 2, n, seed=n)
        np.testing.assert_allclose(traced(x).numpy(), conv1d_stack(x).numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_the_guard_allows_exactly_the_lengths_eager_accepts():
    traced = om.trace(conv1d_stack, randn(2, 2, 20), None, None, "seq", check=False)
    first = smallest_length(conv1d_stack)
    assert first == 7                                     # (7-3)//2+1 = 3, (3-3)//2+1 = 1
    for n in range(2, 12):
        allowed = all(g.holds({"seq": n}) for g in traced.graph.guards)
        assert allowed == (n >= first), n


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("level", LEVELS)
def test_every_backend_refuses_a_too_short_length_by_name(backend, level):
    traced = om.trace(conv1d_stack, randn(2, 2, 20), None, None, "seq", check=False)
    session = traced.create_session(backend=backend, optimization=level)
    for n in (3, 5, 6):
        with pytest.raises(SessionError) as info:
            session.run({"input": randn(2, 2, n)})
        text = str(info.value)
        assert "'input'" in text and "axis 2" in text and "seq" in text, text
        assert "at least 7" in text, text
    out = session.run({"input": randn(2, 2, 7)})["output"]
    assert out.shape == (2, 1, 3)


def test_the_message_is_the_same_on_every_backend_and_level():
    traced = om.trace(conv1d_stack, randn(2, 2, 20), None, None, "seq", check=False)
    messages = set()
    for backend in backends():
        for level in LEVELS:
            session = traced.create_session(backend=backend, optimization=level)
            with pytest.raises(SessionError) as info:
                session.run({"input": randn(2, 2, 4)})
            messages.add(str(info.value))
    assert len(messages) == 1, messages


@pytest.mark.parametrize("stride,dilation,padding", [(1, 1, 0), (2, 1, 0), (3, 2, 0), (2, 2, 1),
                                                     (1, 3, 2)])
def test_conv2d_window_guard_matches_eager_with_stride_dilation_padding(stride, dilation,
                                                                        padding):
    w = randn(2, 2, 3, 3, seed=4)

    def fn(x):
        return om.ops.conv2d(x, w, stride=stride, dilation=dilation, padding=padding)

    extent = dilation * 2 + 1
    example = 3 * extent + 2
    traced = om.trace(fn, randn(1, 2, 5, example), None, None, None, "width")
    first = max(extent - 2 * padding, 1)                 # the reference: the window fits
    for n in range(1, example):
        x = randn(1, 2, 5, n, seed=n)
        try:
            want = fn(x).numpy()
        except om.OneModelError:
            assert n < first
            with pytest.raises(SessionError, match=rf"input 'input' axis 3 \(width\) must be "
                                                   rf"at least {first}\b"):
                traced(x)
            continue
        assert n >= first
        np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(3, 2, 0, False), (5, 1, 1, False),
                                                             (4, 3, 0, True), (3, 2, 0, True)])
def test_pool_window_guard_matches_eager(pool, kernel, stride, padding, ceil_mode):
    op = getattr(om.ops, pool)

    def fn(x):
        return op(x, kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode)

    traced = om.trace(fn, randn(1, 2, 3, 13), None, None, None, "width")
    refused = 0
    for n in range(1, 13):
        x = randn(1, 2, 3, n, seed=n)
        try:
            want = fn(x).numpy()
        except om.OneModelError:
            refused += 1
            with pytest.raises(SessionError, match=r"axis 3 \(width\) must be at least") as info:
                traced(x)
            smallest = int(str(info.value).rsplit(" ", 1)[1])
            fn(randn(1, 2, 3, smallest))                 # eager runs at the size it names
            continue
        np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert refused                                        # some length is too short


def test_the_guard_survives_save_and_load(tmp_path):
    traced = om.trace(conv1d_stack, randn(2, 2, 20), None, None, "seq")
    path = tmp_path / "m.onemodel"
    traced.save(path)
    loaded = om.load(path)
    with pytest.raises(SessionError, match="at least 7"):
        loaded(randn(2, 2, 6))


def test_an_imported_onnx_conv_stack_refuses_a_too_short_length(tmp_path):
    pytest.importorskip("onnx", reason="ONNX export needs the onnx package")
    traced = om.trace(conv1d_stack, randn(2, 2, 20), None, None, "seq")
    path = tmp_path / "m.onnx"
    traced.save_onnx(path)
    imported = om.load_onnx(path)
    for backend in backends():
        session = imported.create_session(backend=backend)
        with pytest.raises(SessionError, match=r"axis 2 \(seq\) must be at least 7"):
            session.run({imported.input_names[0]: randn(2, 2, 5)})
        assert session.run({imported.input_names[0]: randn(2, 2, 7)})[
            imported.output_names[0]].shape == (2, 1, 3)
