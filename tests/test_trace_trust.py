"""Tracing you can trust (issue 12): each case a user hit, as a test.

Ints are constants; slice lengths are exact or guarded; the check tries smaller sizes; a failed
trace leaves the thread as it was; examples may be drawn while recording; sizes work as scalars.
"""
import gc
import threading

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, SessionError, Tensor, TraceException
from onemodel.core import tracing_hooks
from onemodel.trace.check import check_sizes

F32 = DType.F32


def randn(*shape, seed=0):
    return Tensor.randn(F32, *shape, seed=seed)


def eager(fn, *xs):
    with om.GradMode.no_grad():
        return fn(*xs).numpy()


def run_onnx(traced, tmp_path, feeds):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is an optional extra")
    path = tmp_path / "m.onnx"
    traced.save_onnx(path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: v.numpy() for k, v in feeds.items()})


# -- 1. plain ints are constants -----------------------------------------------------------------
def heads_split(x):
    b, s, d = x.shape
    q = x.reshape(b, s, 4, -1).transpose(1, 2)           # 4 heads: equal to the example batch
    w = om.ops.softmax(q @ q.transpose(2, 3), axis=-1)
    return (w @ q).transpose(1, 2).reshape(b, s, d)


def test_head_count_equal_to_example_batch_through_a_bare_tracer(tmp_path):
    tracer = om.Tracer()
    x = tracer.input("x", randn(4, 6, 16), "batch", "seq", None)
    tracer.output("y", heads_split(x))
    traced = tracer.finish()
    for b, s in [(2, 6), (1, 3), (7, 9)]:
        xn = randn(b, s, 16, seed=b)
        np.testing.assert_allclose(traced(xn).numpy(), eager(heads_split, xn), rtol=1e-4,
                                   atol=1e-5)
    xn = randn(2, 5, 16, seed=11)
    (got,) = run_onnx(traced, tmp_path, {"x": xn})
    np.testing.assert_allclose(got, eager(heads_split, xn), rtol=1e-4, atol=1e-5)


def test_transformer_layer_traced_where_heads_and_head_dim_equal_example_sizes():
    om.manual_seed(0)
    layer = om.nn.TransformerEncoderLayer(64, 4, dim_feedforward=32, batch_first=True)
    traced = layer.trace(randn(4, 16, 64), "batch", "seq", None)  # 4 heads, head dim 16
    layer.eval()
    for b, s in [(2, 3), (5, 16), (3, 21)]:
        xn = randn(b, s, 64, seed=s)
        np.testing.assert_allclose(traced(xn).numpy(), eager(layer, xn), rtol=1e-4, atol=1e-5)


def test_weight_shape_equal_to_example_batch_is_a_constant():
    w = randn(4, 3, seed=1)

    def fn(x):                                           # W.shape[0] == 4 == the example batch
        return x.reshape(x.shape[0], w.shape[0], -1).sum(axis=1)

    traced = om.trace(fn, randn(4, 12), "batch", None)
    for b in (2, 6):
        xn = randn(b, 12, seed=b)
        np.testing.assert_allclose(traced(xn).numpy(), eager(fn, xn), rtol=1e-5, atol=1e-6)


def test_group_norm_group_count_equal_to_example_batch():
    def by_reshape(x):                                   # GroupNorm by reshape, 2 groups
        b = x.shape[0]
        g = x.reshape(b, 2, -1)
        mean = g.mean(axis=-1, keepdims=True)
        var = ((g - mean) ** 2).mean(axis=-1, keepdims=True)
        return ((g - mean) / (var + 1e-5) ** 0.5).reshape(x.shape)

    traced = om.trace(by_reshape, randn(2, 8, 5), "batch", None, None)  # 2 groups, batch 2
    for b in (1, 3, 7):
        xn = randn(b, 8, 5, seed=b)
        np.testing.assert_allclose(traced(xn).numpy(), eager(by_reshape, xn), rtol=1e-4,
                                   atol=1e-5)



# -- 2. slice bounds on symbolic axes --------------------------------------------------------------
def tail_mean(x):
    y = x[:, -4:]
    return y.sum(axis=1) / y.shape[1]


def test_negative_fixed_slice_is_exact_below_the_example(tmp_path):
    traced = om.trace(tail_mean, randn(3, 6, 8), "batch", "seq", None)
    session = traced.create_session()
    for s in (2, 3, 4, 9):
        xn = randn(2, s, 8, seed=s)
        np.testing.assert_allclose(session.run({"input": xn})["output"].numpy(),
                                   eager(tail_mean, xn), rtol=1e-5, atol=1e-6)
    y = om.trace(lambda x: x[:, -4:], randn(3, 6, 8), "batch", "seq", None).create_session()
    assert y.outputs[0].shape == ("batch", "min(seq, 4)", 8)
    xn = randn(2, 2, 8, seed=5)
    (got,) = run_onnx(traced, tmp_path, {"input": xn})
    np.testing.assert_allclose(got, eager(tail_mean, xn), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("index", [lambda x: x[:, :8], lambda x: x[:, 1:], lambda x: x[:, :-1],
                                   lambda x: x[:, 2:5], lambda x: x[:, ::2]])
def test_fixed_slices_on_a_symbolic_axis_work_at_every_size(index):
    fn = lambda x: index(x) * 2.0  # noqa: E731
    traced = om.trace(fn, randn(3, 6, 4), "batch", "seq", None)
    for s in (1, 2, 3, 7, 8, 11):
        xn = randn(2, s, 4, seed=s)
        got = traced(xn).numpy()
        assert got.shape == eager(fn, xn).shape
        np.testing.assert_allclose(got, eager(fn, xn), rtol=1e-6)


def test_symbolic_bound_on_a_fixed_axis_is_a_guard_the_session_enforces(tmp_path):
    pos = randn(10, 8, seed=4)                           # a positional table of 10 rows

    def fn(x):
        return x + pos[: x.shape[1]]

    traced = om.trace(fn, randn(3, 6, 8), "batch", "seq", None)
    assert [g.text for g in traced.graph.guards] == ["seq <= 10"]
    assert "require seq <= 10" in str(traced.graph)
    session = traced.create_session()
    xn = randn(2, 10, 8, seed=1)
    np.testing.assert_allclose(session.run({"input": xn})["output"].numpy(), eager(fn, xn),
                               rtol=1e-6)
    with pytest.raises(SessionError, match=r"seq = 11.*seq <= 10.*test_trace_trust\.py"):
        session.run({"input": randn(2, 11, 8)})
    with pytest.raises(SessionError, match="seq <= 10"):
        traced(randn(2, 12, 8))


@pytest.mark.parametrize("fmt", ["onemodel", "onnx"])
def test_guards_survive_save_and_load(tmp_path, fmt):
    pos = randn(10, 8, seed=4)
    traced = om.trace(lambda x: x + pos[: x.shape[1]], randn(3, 6, 8), "batch", "seq", None)
    path = tmp_path / f"m.{fmt}"
    (traced.save if fmt == "onemodel" else traced.save_onnx)(path)  # ONNX: metadata_props
    loaded = (om.load if fmt == "onemodel" else om.load_onnx)(path)
    assert [g.text for g in loaded.graph.guards] == ["seq <= 10"]
    with pytest.raises(SessionError, match="seq <= 10"):
        loaded.create_session().run({"input": randn(2, 11, 8)})


def test_guard_false_at_the_example_is_refused_naming_the_op():
    pos = randn(4, 8, seed=4)
    with pytest.raises(TraceException, match=r"ops\.index.*seq <= 4"):
        om.trace(lambda x: x + pos[: x.shape[1]], randn(3, 6, 8), "batch", "seq", None)


# -- 3. the check tries smaller sizes, and the dict form ----------------------------------------
def test_check_sizes_go_below_the_example():
    assert check_sizes(6)[:2] == [2, 3]
    assert check_sizes(3)[0] == 2 and all(n != 3 for n in check_sizes(3))
    assert all(n > 2 for n in check_sizes(2))


def test_check_catches_an_inference_wrong_below_the_example():
    from onemodel.registry import OpDef, Sample, hookimpl
    from onemodel.core.types import TensorType

    def infer(x):                                        # claims 4 columns at every size
        return TensorType(x.dtype, (x.shape[0], 4))

    record = OpDef(name="last_four_wrong", inputs=("x",), kernel=lambda x: x[:, -4:],
                   infer=infer, vjp=None,
                   samples=lambda rng: [Sample(args=(rng.standard_normal((2, 5)),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (record,)

    plugin = Plugin()
    om.registry.register(plugin, "test-last-four")
    try:
        with pytest.raises(TraceException, match=r"seq' = 2.*last_four_wrong.*inference"):
            om.trace(lambda x: om.ops.last_four_wrong(x), randn(3, 6), "batch", "seq")
    finally:
        om.registry.unregister(plugin)


def masked_mean(tokens, mask):
    return (tokens * mask.unsqueeze(-1)).sum(axis=1) / mask.sum(axis=1, keepdims=True)


def test_trace_with_a_dict_of_inputs_is_checked():
    tok = randn(3, 5, 8, seed=2)
    msk = Tensor.from_numpy((np.arange(15).reshape(3, 5) % 3 != 0).astype(np.float32))
    model = om.trace(masked_mean, {"tokens": (tok, "batch", "seq", None),
                                   "mask": (msk, "batch", "seq")})
    assert model.input_names == ["tokens", "mask"]
    t2 = randn(2, 4, 8, seed=3)
    m2 = Tensor.from_numpy(np.ones((2, 4), np.float32))
    np.testing.assert_allclose(model(t2, m2).numpy(), eager(masked_mean, t2, m2), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(om.ArgumentError, match="axis names in the dict"):
        om.trace(masked_mean, {"tokens": (tok, "batch", "seq", None)}, "batch")
    with pytest.raises(om.ArgumentError, match="'mask' must be"):
        om.trace(masked_mean, {"tokens": (tok, "batch", "seq", None), "mask": msk})


# -- 4. a failed Tracer never poisons its thread ---------------------------------------------------
def assert_thread_is_clean():
    assert tracing_hooks.current() is None
    assert om.GradMode.is_enabled()
    x = randn(2, 3)
    x.numpy()
    w = randn(3, 3).requires_grad_()
    (x @ w).sum().backward()
    assert w.grad is not None
    again = om.trace(lambda v: v * 2.0 + 1.0, Tensor.zeros(F32, 4, 3), "batch", None)
    np.testing.assert_allclose(again(Tensor.ones(F32, 5, 3)).numpy(), np.full((5, 3), 3.0))


@pytest.mark.parametrize("failure", ["item", "dropout", "inplace"])
def test_refused_op_leaves_the_thread_as_it_was(failure):
    tracer = om.Tracer()
    x = tracer.input("x", randn(4, 3), "batch", None)
    with pytest.raises(TraceException):
        if failure == "item":
            x.sum().item()
        elif failure == "dropout":
            om.ops.dropout(x, p=0.5, training=True)
        else:
            x.add_(1.0)
    assert_thread_is_clean()
    with pytest.raises(TraceException, match="aborted by an earlier error"):
        tracer.output("y", x)
    with pytest.raises(TraceException, match="aborted"):
        tracer.finish()


def test_user_exception_state_dies_with_the_tracer():
    tracer = om.Tracer()
    x = tracer.input("x", randn(4, 3), "batch", None)
    try:
        (x * 2.0)
        raise KeyError("the user's own bug")
    except KeyError:
        pass
    assert tracing_hooks.current() is tracer            # still recording: the Tracer is alive
    del tracer
    gc.collect()
    assert x is not None                                 # a traced tensor does not keep it alive
    assert_thread_is_clean()


def test_user_exception_inside_a_with_block_aborts():
    with pytest.raises(KeyError):
        with om.Tracer() as tracer:
            tracer.input("x", randn(4, 3), "batch", None)
            raise KeyError("boom")
    assert_thread_is_clean()
    with pytest.raises(TraceException, match="KeyError raised inside the traced code"):
        tracer.input("y", randn(4, 3), "batch", None)


def test_another_threads_dead_tracer_never_resets_this_trace():
    def abandon():
        t = om.Tracer()
        x = t.input("x", randn(4, 3), "batch", None)
        cycle = [t, x]
        cycle.append(cycle)                              # only the collector can free it
        try:
            raise RuntimeError("thread dies mid-trace")
        except RuntimeError:
            pass

    results = []

    def fn(v):
        th = threading.Thread(target=abandon)
        th.start()
        th.join()
        gc.collect()                                     # finalise the other thread's tracer
        return v * 2.0 + 1.0

    traced = om.trace(fn, randn(4, 3), "batch", None)
    results.append(traced(Tensor.full(F32, 5.0, 2, 3)).numpy())
    np.testing.assert_allclose(results[0], np.full((2, 3), 11.0))
    assert_thread_is_clean()


def test_a_tracer_belongs_to_its_thread():
    tracer = om.Tracer()
    x = tracer.input("x", randn(4, 3), "batch", None)
    errors = []

    def other():
        try:
            tracer.output("y", x)
        except TraceException as exc:
            errors.append(str(exc))

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert errors and "thread" in errors[0]
    tracer.output("y", x * 2.0)
    assert tracer.finish().graph.nodes


def test_tracer_is_a_context_manager_and_nested_traces_are_refused():
    with om.Tracer() as outer:
        x = outer.input("x", randn(4, 3), "batch", None)
        with pytest.raises(TraceException, match="another trace"):
            om.trace(lambda v: v, randn(4, 3), "batch", None)
        outer.output("y", x + 1.0)
        model = outer.finish()
    assert model.graph.nodes
    assert_thread_is_clean()


# -- 5. building examples while recording ---------------------------------------------------------
def test_random_examples_may_be_drawn_after_the_first_input():
    with om.Tracer() as tracer:
        left = tracer.input("left", randn(4, 3), "batch", None)
        right = tracer.input("right", Tensor.randn(F32, 4, 3, seed=1), "batch", None)
        zeros = tracer.input("z", Tensor.zeros(F32, 4, 3), "batch", None)
        tracer.output("y", left * right + zeros)
        model = tracer.finish()
    a, b, c = randn(2, 3, seed=5), randn(2, 3, seed=6), randn(2, 3, seed=7)
    np.testing.assert_allclose(model(a, b, c).numpy(), a.numpy() * b.numpy() + c.numpy(),
                               rtol=1e-6)


def test_random_draw_used_as_a_graph_constant_is_refused_naming_op_and_line():
    def fn(x):
        noise = Tensor.randn(F32, 3)
        return x + noise

    with pytest.raises(TraceException, match=r"ops\.add.*Tensor\.randn at .*test_trace_trust"):
        om.trace(fn, randn(4, 3), "batch", None)
    assert_thread_is_clean()


# -- 7. two threads trace one module ------------------------------------------------------------------
def test_two_threads_tracing_one_module_restore_training_mode():
    om.manual_seed(2)
    model = om.nn.Sequential(om.nn.Linear(3, 8), om.nn.Dropout(0.1), om.nn.Linear(8, 2))
    model.train()
    barrier = threading.Barrier(2)
    errors = []

    def work(seed):
        try:
            for i in range(15):
                barrier.wait()
                model.trace(randn(4, 3, seed=seed + i), "batch", None, check=i % 3 == 0)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(k * 100,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert model.training and all(m.training for m in model.children())


# -- 8. sizes used as values -------------------------------------------------------------------------
def test_symbolic_size_as_a_scalar_operand(tmp_path):
    fn = lambda x: x.sum(1) / x.shape[1]  # noqa: E731
    traced = om.trace(fn, randn(3, 6), "batch", "seq")
    for b, s in [(2, 2), (4, 9)]:
        xn = randn(b, s, seed=s)
        np.testing.assert_allclose(traced(xn).numpy(), xn.numpy().mean(axis=1), rtol=1e-5)
    xn = randn(2, 3, seed=9)
    (got,) = run_onnx(traced, tmp_path, {"input": xn})
    np.testing.assert_allclose(got, xn.numpy().mean(axis=1), rtol=1e-5)


def test_split_in_symbolic_halves():
    def fn(x):
        h = x.shape[1] // 2
        a, b = om.ops.split(x, (h, h), axis=1)
        return a * b

    traced = om.trace(fn, randn(3, 8), "batch", "seq")
    for s in (2, 6, 12):
        xn = randn(2, s, seed=s)
        np.testing.assert_allclose(traced(xn).numpy(), eager(fn, xn), rtol=1e-6)


def test_onnx_export_of_a_fill_with_a_symbolic_value(tmp_path):
    fn = lambda x: x * om.ops.full((1, 1), x.shape[1], dtype="f32")  # noqa: E731
    traced = om.trace(fn, randn(3, 5), "batch", "seq")
    xn = randn(2, 7, seed=1)
    np.testing.assert_allclose(traced(xn).numpy(), xn.numpy() * 7, rtol=1e-6)
    (got,) = run_onnx(traced, tmp_path, {"input": xn})
    np.testing.assert_allclose(got, xn.numpy() * 7, rtol=1e-6)


# -- 9. messages -------------------------------------------------------------------------------------
def test_len_of_a_symbolic_axis_is_named_len():
    with pytest.raises(TraceException, match=r"len\(\).*'?batch'?.*x\.shape\[0\]"):
        om.trace(lambda x: x * len(x), randn(4, 3), "batch", None)
    assert_thread_is_clean()


def test_slice_past_the_example_on_a_symbolic_axis_is_not_refused():
    traced = om.trace(lambda x: x[:, :8] + 0.0, randn(3, 6), "batch", "seq")
    assert traced(randn(2, 10)).shape == (2, 8)
    assert traced(randn(2, 3)).shape == (2, 3)


def test_record_time_reshape_refusal_names_the_int_line_and_axis():
    # 6 columns cannot make rows of 4: refused while recording, and the 4 (equal to the example
    # batch) is named with its line, in case the batch was meant
    refused = r"ops\.reshape (cannot be recorded|fails on the example)"
    with pytest.raises(TraceException, match=refused) as info:
        om.trace(lambda x: x.reshape(x.shape[0], 4, -1), randn(4, 6), "batch", None)
    text = str(info.value)
    assert "the int 4 passed to ops.reshape at" in text and "test_trace_trust.py" in text
    assert "axis 'batch'" in text
    assert_thread_is_clean()


def test_aborted_trace_keeps_no_eager_tensor_alive():
    import weakref

    tracer = om.Tracer()
    x = tracer.input("x", randn(4, 3), "batch", None)
    with pytest.raises(TraceException):
        x.sum().item()
    refs = []
    for i in range(20):                                  # eager work after the failure
        t = randn(64, 64, seed=i)
        refs.append(weakref.ref(t))
        (t @ t).relu()
    del t
    gc.collect()
    assert all(r() is None for r in refs)
    assert len(tracer.builder.nodes) <= 2                # nothing recorded after the abort


def test_threads_trace_at_once_without_touching_each_other():
    errors, results = [], {}
    barrier = threading.Barrier(3)

    def work(k):
        try:
            barrier.wait()
            for i in range(10):
                model = om.trace(lambda v: v * float(k) + float(i),  # noqa: B023 - traced now
                                 randn(4, 3), "batch", None)
                results[(k, i)] = model(Tensor.ones(F32, 2, 3)).numpy()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (k, i), got in results.items():
        np.testing.assert_allclose(got, np.full((2, 3), k + i, np.float32))
    assert len(results) == 30


def test_onnx_import_records_the_guards_its_slices_need(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    table = np.arange(40, dtype=np.float32).reshape(10, 4)  # y = table[:seq] + x
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=0, end=1),
             helper.make_node("Slice", ["table", "zero", "s", "zero"], ["t"]),
             helper.make_node("Add", ["t", "x"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 4])],
        initializer=[numpy_helper.from_array(table, "table"),
                     numpy_helper.from_array(np.array([0], np.int64), "zero")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "g.onnx")
    model = om.load_onnx(tmp_path / "g.onnx")
    assert [g.text for g in model.graph.guards] == ["seq <= 10"]
    session = model.create_session()
    np.testing.assert_array_equal(session.run({"x": np.ones((3, 4), np.float32)})["y"].numpy(),
                                  table[:3] + 1)
    with pytest.raises(SessionError, match=r"seq = 12.*seq <= 10"):
        session.run({"x": np.ones((12, 4), np.float32)})


def test_a_size_zero_where_the_graph_assumes_at_least_one_is_refused_by_name():
    traced = om.trace(lambda x: x[:, 1:] * 2.0, randn(3, 5), "batch", "seq")
    for backend in om.backends():
        session = traced.create_session(backend=backend)
        with pytest.raises(SessionError, match=r"seq = 0.*at least 1.*seq - 1"):
            session.run({"input": np.zeros((2, 0), np.float32)})
        assert session.run({"input": np.zeros((0, 4), np.float32)})["output"].shape == (0, 3)
