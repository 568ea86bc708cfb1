"""The glue of text models on the compiled backend, against the numpy backend and numpy formulas
written here: take / embedding by int64 token ids (negative indices, out of range naming the
node), constant indices as views, split and reshapes of strided pieces as views, and the
attention mask chain (int64 mask, casts, comparisons, where, isnan) with NaN, inf and -0.0,
on both kernel copies, at several batch sizes and sequence lengths (symbolic dims)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor
from onemodel.core.graph import GraphBuilder
from onemodel.core.interpreter import NodeExecutionError
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType

F32, I64, BOOL = om.DType.F32, om.DType.I64, om.DType.BOOL
B, S = Dim.symbol("batch"), Dim.symbol("seq")


def _sessions(graph):
    return (om.Session(graph, backend="numpy", optimization="none"),
            om.Session(graph, backend="compiled", optimization="none"))


def _run_both(graph, feeds, all_native=True):
    ref_s, got_s = _sessions(graph)
    if all_native:
        src = got_s.plan_source(feeds)
        assert " 0 on numpy" in src, src
    ref = {k: v.numpy() for k, v in ref_s.run(feeds).items()}
    got = {k: v.numpy() for k, v in got_s.run(feeds).items()}
    for k in ref:
        assert got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape, k
    return ref, got


def _table(v=7, d=5, seed=0):
    t = np.random.default_rng(seed).standard_normal((v, d)).astype(np.float32)
    t[1, 0], t[2, 3], t[3, 4] = np.nan, np.inf, -np.inf
    return t


def _embed_graph(op="take", d=5):
    gb = GraphBuilder()
    gb.add_input("ids", TensorType(I64, (B, S)))
    table = _table(d=d)
    gb.add_initializer("table", table)
    t = TensorType(F32, (B, S, d))
    if op == "take":
        e, = gb.add_node("take", ["table", "ids"], [t], {"axis": 0})
    else:
        e, = gb.add_node("embedding", ["ids", "table"], [t])
    y, = gb.add_node("relu", [e.name], [t])  # a native reader after the gather
    return gb.finish([("emb", e.name), ("y", y.name)]), table


@pytest.mark.parametrize("b,s", [(1, 1), (1, 6), (3, 4)])
def test_take_by_fed_token_ids_with_negative_indices(b, s, isa):
    graph, table = _embed_graph()
    ids = np.random.default_rng(b * 10 + s).integers(-7, 7, (b, s))
    ref, got = _run_both(graph, {"ids": ids})
    np.testing.assert_array_equal(got["emb"], table[ids])  # numpy wraps negative indices
    np.testing.assert_array_equal(got["emb"], ref["emb"])
    np.testing.assert_array_equal(got["y"], ref["y"])


def test_take_reads_ids_through_a_reshape_view_of_the_feed(isa):
    gb = GraphBuilder()
    gb.add_input("ids", TensorType(I64, (B, S)))
    table = _table()
    gb.add_initializer("table", table)
    flat, = gb.add_node("reshape", ["ids"], [TensorType(I64, (B * S,))], {"shape": (-1,)})
    e, = gb.add_node("take", ["table", flat.name], [TensorType(F32, (B * S, 5))], {"axis": 0})
    graph = gb.finish([("emb", e.name), ("flat", flat.name)])
    ids = np.array([[0, 6, -1], [2, 3, 4]])
    ref, got = _run_both(graph, {"ids": ids})
    np.testing.assert_array_equal(got["emb"], table[ids.reshape(-1)])
    np.testing.assert_array_equal(got["flat"], ids.reshape(-1))  # an int64 view as an output
    assert got["flat"].dtype == np.int64


@pytest.mark.parametrize("op,bad", [("take", 7), ("take", -8), ("embedding", -1),
                                    ("embedding", 7)])
def test_out_of_range_index_names_the_node_as_numpy_does(op, bad, isa):
    graph, _ = _embed_graph(op)
    ids = np.array([[0, 1, bad, 2]])
    ref_s, got_s = _sessions(graph)
    assert " 0 on numpy" in got_s.plan_source({"ids": ids})
    with pytest.raises(NodeExecutionError) as want:
        ref_s.run({"ids": ids})
    with pytest.raises(NodeExecutionError) as err:
        got_s.run({"ids": ids})
    assert str(err.value) == str(want.value)
    assert op in str(err.value)
    # the session still runs good ids afterwards
    good = np.array([[0, 1, 2, 3]])
    np.testing.assert_array_equal(got_s.run({"ids": good})["emb"].numpy(),
                                  ref_s.run({"ids": good})["emb"].numpy())


def test_embedding_by_fed_ids(isa):
    graph, table = _embed_graph("embedding", d=16)
    ids = np.array([[6, 0, 3], [1, 1, 2]])
    ref, got = _run_both(graph, {"ids": ids})
    np.testing.assert_array_equal(got["emb"], table[ids])
    np.testing.assert_array_equal(got["y"], ref["y"])


@pytest.mark.parametrize("index,axis", [(np.array(2), 1), (np.array(-1), 0),
                                        (np.array([1, 2, 3]), 1), (np.array([[3, 0], [1, -1]]), 1),
                                        (np.array([5, 0, -12]), None), (np.array(-3), 2)])
def test_take_with_constant_indices(index, axis, isa):
    """A scalar index or an increasing run is a view, other constant indices a gather."""
    x = np.random.default_rng(5).standard_normal((2, 4, 3)).astype(np.float32)
    x[1, 2, 0] = np.nan
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (2, 4, 3)))
    gb.add_initializer("idx", index.astype(np.int64))
    want = np.take(x, index, axis=axis)
    y, = gb.add_node("relu", ["x"], [TensorType(F32, (2, 4, 3))])
    t, = gb.add_node("take", [y.name, "idx"], [TensorType(F32, want.shape)], {"axis": axis})
    z, = gb.add_node("neg", [t.name], [TensorType(F32, want.shape)])
    graph = gb.finish([("t", t.name), ("z", z.name)])
    ref, got = _run_both(graph, {"x": x})
    relu = np.where(np.isnan(x), x, np.maximum(x, 0))
    np.testing.assert_array_equal(got["t"], np.take(relu, index, axis=axis))
    np.testing.assert_array_equal(got["z"], ref["z"])


def test_constant_index_out_of_range_fails_as_on_numpy():
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (2, 3)))
    gb.add_initializer("idx", np.array(3, np.int64))
    t, = gb.add_node("take", ["x", "idx"], [TensorType(F32, (2,))], {"axis": 1})
    ref_s, got_s = _sessions(gb.finish([("t", t.name)]))
    x = np.ones((2, 3), np.float32)
    with pytest.raises(NodeExecutionError) as want:
        ref_s.run({"x": x})
    with pytest.raises(NodeExecutionError) as err:
        got_s.run({"x": x})
    assert str(err.value) == str(want.value) and "out of bounds" in str(err.value)


@pytest.mark.parametrize("s", [1, 5])
def test_split_of_a_fused_projection_into_heads_is_views(s, isa):
    """GPT-2's attention input: one linear to 3 * d, split on the last axis, each piece reshaped
    to heads and permuted; the pieces and their reshapes are views (no copy instruction)."""
    d, h = 8, 2
    rng = np.random.default_rng(s)
    w = rng.standard_normal((3 * d, d)).astype(np.float32)
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (B, S, d)))
    gb.add_initializer("w", w)
    qkv, = gb.add_node("linear", ["x", "w"], [TensorType(F32, (B, S, 3 * d))])
    pieces = gb.add_node("split", [qkv.name], [TensorType(F32, (B, S, d))] * 3,
                         {"sizes": (d, d, d), "axis": 2})
    heads = []
    for p in pieces:
        r, = gb.add_node("reshape", [p.name], [TensorType(F32, (B, S, h, d // h))],
                         {"shape": (B, S, -1, d // h)})
        t, = gb.add_node("permute", [r.name], [TensorType(F32, (B, h, S, d // h))],
                         {"axes": (0, 2, 1, 3)})
        heads.append(t.name)
    kt, = gb.add_node("transpose", [heads[1]], [TensorType(F32, (B, h, d // h, S))],
                      {"axis0": 2, "axis1": 3})
    sc, = gb.add_node("matmul", [heads[0], kt.name], [TensorType(F32, (B, h, S, S))])
    graph = gb.finish([("scores", sc.name), ("v", heads[2])])
    x = rng.standard_normal((2, s, d)).astype(np.float32)
    ref, got = _run_both(graph, {"x": x})
    qkv_ = (x.astype(np.float64) @ w.T.astype(np.float64))
    q, k, v = (qkv_[..., i * d:(i + 1) * d].reshape(2, s, h, d // h).transpose(0, 2, 1, 3)
               for i in range(3))
    np.testing.assert_allclose(got["scores"], q @ k.transpose(0, 1, 3, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["v"], v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["scores"], ref["scores"], rtol=1e-4, atol=1e-5)
    src = _sessions(graph)[1].plan_source({"x": x})
    assert "copy        reshape" not in src and "split" not in src.split("\n", 1)[1], src


def _mask_graph():
    """HF-style: an int64 attention mask -> bool -> where(mask, 0, -inf) added to scores ->
    softmax -> where(isnan(p), 0, p), plus comparisons and casts with bool outputs."""
    gb = GraphBuilder()
    gb.add_input("scores", TensorType(F32, (B, 2, S, S)))
    gb.add_input("mask", TensorType(I64, (B, S)))
    gb.add_initializer("zero", np.zeros(1, np.float32))
    gb.add_initializer("ninf", np.array([-np.inf], np.float32))
    gb.add_initializer("causal", np.tril(np.ones((6, 6), bool)))
    mb, = gb.add_node("cast", ["mask"], [TensorType(BOOL, (B, S))], {"dtype": BOOL})
    m4, = gb.add_node("reshape", [mb.name], [TensorType(BOOL, (B, 1, 1, S))],
                      {"shape": (B, 1, 1, S)})
    add, = gb.add_node("where", [m4.name, "zero", "ninf"], [TensorType(F32, (B, 1, 1, S))])
    logits, = gb.add_node("add", ["scores", add.name], [TensorType(F32, (B, 2, S, S))])
    p, = gb.add_node("softmax", [logits.name], [TensorType(F32, (B, 2, S, S))], {"axis": -1})
    nan, = gb.add_node("isnan", [p.name], [TensorType(BOOL, (B, 2, S, S))])
    safe, = gb.add_node("where", [nan.name, "zero", p.name], [TensorType(F32, (B, 2, S, S))])
    mf, = gb.add_node("cast", ["mask"], [TensorType(F32, (B, S))], {"dtype": F32})
    outs = [("p", safe.name), ("isnan", nan.name), ("mask_f32", mf.name)]
    for op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        c, = gb.add_node(op, ["scores", p.name], [TensorType(BOOL, (B, 2, S, S))])
        outs.append((op, c.name))
    sb, = gb.add_node("cast", ["scores"], [TensorType(BOOL, (B, 2, S, S))], {"dtype": BOOL})
    both, = gb.add_node("mul", [sb.name, nan.name], [TensorType(BOOL, (B, 2, S, S))])
    back, = gb.add_node("cast", [both.name], [TensorType(F32, (B, 2, S, S))], {"dtype": F32})
    outs += [("scores_bool", sb.name), ("and", both.name), ("and_f32", back.name)]
    return gb.finish(outs)


@pytest.mark.parametrize("b,s", [(1, 1), (1, 4), (3, 6)])
def test_attention_mask_chain_native_as_numpy(b, s, isa):
    rng = np.random.default_rng(b + s)
    scores = rng.standard_normal((b, 2, s, s)).astype(np.float32)
    scores.flat[::7] = 0.0
    scores.flat[1::11] = -0.0
    scores.flat[2::13] = np.nan
    scores.flat[3::17] = np.inf
    mask = rng.integers(0, 2, (b, s)).astype(np.int64)
    mask[:, 0] = 1
    mask[0, 0] = (1 << 40) + 1  # nonzero int64 beyond float32's integers
    if b > 1:
        mask[-1, :] = 0  # a fully masked row: softmax of -inf is NaN, then zeroed
    ref, got = _run_both(_mask_graph(), {"scores": scores, "mask": mask})
    for k in ref:
        if ref[k].dtype == np.bool_:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
        else:
            np.testing.assert_array_equal(np.isnan(got[k]), np.isnan(ref[k]), err_msg=k)
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # independent formulas
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        logits = scores + np.where(mask.astype(bool), 0.0, -np.inf)[:, None, None, :]
        e = np.exp(logits - logits.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(got["p"], np.where(np.isnan(p), 0, p), rtol=1e-5, atol=1e-6)
    assert not np.isnan(got["p"]).any() and (b == 1 or (got["p"][-1] == 0).all())
    np.testing.assert_array_equal(got["mask_f32"], mask.astype(np.float32))
    np.testing.assert_array_equal(got["scores_bool"], scores != 0)  # NaN: True, -0.0: False
    # the comparisons read the softmax before the NaN guard: against numpy on the same floats
    raw = got["p"].copy()
    raw[got["isnan"]] = np.nan
    for op, fn in (("less", np.less), ("greater_equal", np.greater_equal), ("equal", np.equal)):
        np.testing.assert_array_equal(got[op], fn(scores, raw), err_msg=op)


def test_bool_from_native_code_read_by_a_numpy_step(isa):
    """A bool computed natively (0.0 / 1.0 in the arena) reaches an op without a lowering as a
    real bool array."""
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (B, 3)))
    gb.add_initializer("half", np.array(0.5, np.float32))
    g, = gb.add_node("greater", ["x", "half"], [TensorType(BOOL, (B, 3))])
    a, = gb.add_node("all", [g.name], [TensorType(BOOL, (B,))], {"axis": 1})
    graph = gb.finish([("all", a.name), ("g", g.name)])
    x = np.array([[1, 2, 3], [1, 0.2, np.nan], [0.6, 0.7, 0.8]], np.float32)
    ref, got = _run_both(graph, {"x": x}, all_native=False)
    np.testing.assert_array_equal(got["all"], [True, False, True])
    np.testing.assert_array_equal(got["g"], ref["g"])


def test_gelu_tanh_on_8_lanes_against_a_float64_formula(isa):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(203) * 6).astype(np.float32)
    x[[0, 7, 8, 201, 202]] = [np.nan, np.inf, -np.inf, np.nan, -0.0]
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (Dim.symbol("n"),)))
    y, = gb.add_node("gelu", ["x"], [TensorType(F32, (Dim.symbol("n"),))],
                     {"approximate": "tanh"})
    ref, got = _run_both(gb.finish([("y", y.name)]), {"x": x})
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        want = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_array_equal(np.isnan(got["y"]), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got["y"][ok], want[ok], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["y"][ok], ref["y"][ok], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cols", [5, 8, 128, 131])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_rows_on_8_lanes_against_the_formula(cols, affine, isa):
    """The normalising pass runs 8 lanes at a time (scalar tail past a multiple of 8); a row
    holding NaN or inf gives NaN in that row only, as numpy's."""
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((6, cols)) * 3 + 1).astype(np.float32)
    x[1, 2], x[4, cols - 1] = np.nan, np.inf
    g = rng.standard_normal(cols).astype(np.float32)
    bt = rng.standard_normal(cols).astype(np.float32)
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (B, cols)))
    ins = ["x"]
    if affine in ("both", "weight"):
        gb.add_initializer("g", g)
        ins.append("g")
    if affine == "both":
        gb.add_initializer("b", bt)
        ins.append("b")
    y, = gb.add_node("layer_norm", ins, [TensorType(F32, (B, cols))],
                     {"normalized_shape": (cols,), "eps": 1e-5})
    ref, got = _run_both(gb.finish([("y", y.name)]), {"x": x})
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    if affine != "none":
        want = want * g
    if affine == "both":
        want = want + bt
    np.testing.assert_array_equal(np.isnan(got["y"]), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got["y"][ok], want[ok], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y"][ok], ref["y"][ok], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reader", ["transpose", "permute", "returned"])
def test_attention_writes_heads_last_for_the_merge_of_heads(reader, isa):
    """An attention output whose only reader swaps heads and sequence is stored (batch, seq,
    heads, dv), so merging the heads is a view (no copy instruction); returned as an output
    too, it is stored as is. Against the formula, NaN carried."""
    b, h, s, d = 2, 3, 5, 4
    rng = np.random.default_rng(len(reader))
    q, k, v = (rng.standard_normal((b, h, s, d)).astype(np.float32) for _ in range(3))
    v[1, 2, 3, 1] = np.nan
    gb = GraphBuilder()
    t = TensorType(F32, (B, h, s, d))
    for name in "qkv":
        gb.add_input(name, t)
    o, = gb.add_node("scaled_dot_product_attention", ["q", "k", "v", None], [t])
    swapped = TensorType(F32, (B, s, h, d))
    if reader == "permute":
        sw, = gb.add_node("permute", [o.name], [swapped], {"axes": (0, 2, 1, 3)})
    else:
        sw, = gb.add_node("transpose", [o.name], [swapped], {"axis0": 1, "axis1": 2})
    m, = gb.add_node("reshape", [sw.name], [TensorType(F32, (B, s, h * d))],
                     {"shape": (B, s, h * d)})
    y, = gb.add_node("relu", [m.name], [TensorType(F32, (B, s, h * d))])
    outs = [("y", y.name)] + ([("o", o.name)] if reader == "returned" else [])
    graph = gb.finish(outs)
    feeds = {"q": q, "k": k, "v": v}
    ref, got = _run_both(graph, feeds)
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    sc = q64 @ k64.transpose(0, 1, 3, 2) / np.sqrt(d)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    att = (p / p.sum(-1, keepdims=True)) @ v64
    merged = att.transpose(0, 2, 1, 3).reshape(b, s, h * d)
    want = np.where(np.isnan(merged), merged, np.maximum(merged, 0))
    np.testing.assert_array_equal(np.isnan(got["y"]), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got["y"][ok], want[ok], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y"][ok], ref["y"][ok], rtol=1e-4, atol=1e-5)
    if reader == "returned":
        np.testing.assert_allclose(got["o"], ref["o"], rtol=1e-4, atol=1e-5)
    src = _sessions(graph)[1].plan_source(feeds)
    assert ("copy" in src) == (reader == "returned"), src


@pytest.mark.parametrize("sk,d", [(8, 8), (24, 12), (17, 9), (40, 32)])
def test_attention_keys_transposed_8x8_with_tails(sk, d, isa):
    """The attention kernel packs K^T by 8x8 register transposes, element by element past the
    last whole block of keys or dims; K read as a strided view (heads of one projection)."""
    h, sq, dv = 2, 3, 5
    rng = np.random.default_rng(sk * d)
    gb = GraphBuilder()
    gb.add_input("q", TensorType(F32, (B, h, sq, d)))
    gb.add_input("kk", TensorType(F32, (B, sk, h * d)))
    gb.add_input("v", TensorType(F32, (B, h, sk, dv)))
    r, = gb.add_node("reshape", ["kk"], [TensorType(F32, (B, sk, h, d))], {"shape": (B, sk, h, d)})
    k, = gb.add_node("transpose", [r.name], [TensorType(F32, (B, h, sk, d))],
                     {"axis0": 1, "axis1": 2})
    o, = gb.add_node("scaled_dot_product_attention", ["q", k.name, "v", None],
                     [TensorType(F32, (B, h, sq, dv))])
    feeds = {"q": rng.standard_normal((2, h, sq, d)).astype(np.float32),
             "kk": rng.standard_normal((2, sk, h * d)).astype(np.float32),
             "v": rng.standard_normal((2, h, sk, dv)).astype(np.float32)}
    ref, got = _run_both(gb.finish([("o", o.name)]), feeds)
    k64 = feeds["kk"].astype(np.float64).reshape(2, sk, h, d).transpose(0, 2, 1, 3)
    sc = feeds["q"].astype(np.float64) @ k64.transpose(0, 1, 3, 2) / np.sqrt(d)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ feeds["v"].astype(np.float64)
    np.testing.assert_allclose(got["o"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["o"], ref["o"], rtol=1e-4, atol=1e-5)


def test_empty_sequence_runs_on_numpy_as_the_numpy_backend():
    """A zero-length sequence has nothing to lower: the plan runs the numpy kernels."""
    graph, _ = _embed_graph()
    ids = np.zeros((2, 0), np.int64)
    ref, got = _run_both(graph, {"ids": ids}, all_native=False)
    assert got["emb"].shape == (2, 0, 5) and got["y"].shape == (2, 0, 5)
    mask_graph = _mask_graph()
    feeds = {"scores": np.zeros((1, 2, 0, 0), np.float32), "mask": np.zeros((1, 0), np.int64)}
    ref, got = _run_both(mask_graph, feeds, all_native=False)
    assert got["p"].shape == (1, 2, 0, 0) and got["isnan"].dtype == np.bool_


@pytest.mark.parametrize("act", ["tanh", "sigmoid", "gelu_tanh"])
def test_gemm_epilogue_tanh_sigmoid_gelu_tanh_in_registers(act, isa):
    """A linear fused with tanh, sigmoid or GELU-tanh (GPT-2's) applies it on 8 lanes to whole
    16-column tiles, the scalar formula to the rest (37 columns: two tiles and 5); M = 1 takes
    the GEMV. Against the numpy backend and a float64 formula, NaN and inf included."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((37, 24)).astype(np.float32)
    b = rng.standard_normal(37).astype(np.float32)
    fns = {"tanh": om.ops.tanh, "sigmoid": om.ops.sigmoid,
           "gelu_tanh": lambda t: om.ops.gelu(t, approximate="tanh")}

    def fn(x):
        return fns[act](om.ops.linear(x, Tensor.from_numpy(w), Tensor.from_numpy(b)))

    x = (rng.standard_normal((13, 24)) * 2).astype(np.float32)
    x[2, 3], x[7, 0], x[8, 5] = np.nan, np.inf, -np.inf
    traced = om.trace(fn, Tensor.from_numpy(x[:5] * 0 + 1), "batch", None)
    numpy, compiled = om.Session(traced, backend="numpy"), om.Session(traced, backend="compiled")
    assert "fused_linear" in compiled.plan_source({"input": x})
    for rows in (x, x[2:3], x[9:10]):
        h = rows.astype(np.float64) @ w.T.astype(np.float64) + b
        with np.errstate(invalid="ignore", over="ignore"):
            want = {"tanh": np.tanh(h), "sigmoid": 0.5 * np.tanh(0.5 * h) + 0.5,
                    "gelu_tanh": 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                        * (h + 0.044715 * h ** 3)))}[act]
        ref = numpy.run({"input": rows})["output"].numpy()
        got = compiled.run({"input": rows})["output"].numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(ref)
        np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["float_heads", "float_2d", "bool_causal", "bool_padding",
                                  "bool_fed"])
def test_attention_with_a_mask_in_the_kernel(kind, isa):
    """A float mask is added to the scaled scores, a bool mask keeps its True positions (-inf
    elsewhere; a fully masked row is NaN, as numpy's), broadcast over batch and heads: one
    attention instruction, against the formula and the numpy backend."""
    b, h, sq, sk, d, dv = 2, 3, 5, 6, 8, 4
    rng = np.random.default_rng(len(kind))
    q = rng.standard_normal((b, h, sq, d)).astype(np.float32)
    k = rng.standard_normal((b, h, sk, d)).astype(np.float32)
    v = rng.standard_normal((b, h, sk, dv)).astype(np.float32)
    if kind == "float_heads":
        mask = rng.standard_normal((b, 1, sq, sk)).astype(np.float32)
        mask[1, 0, 2, 3] = -np.inf
    elif kind == "float_2d":
        mask = rng.standard_normal((sq, sk)).astype(np.float32)
    elif kind in ("bool_causal", "bool_fed"):
        mask = np.tril(np.ones((sq, sk), bool))
    else:
        mask = np.ones((b, 1, 1, sk), bool)
        mask[1, 0, 0, 2:] = False
        mask[0] = False  # every position masked: NaN rows
    gb = GraphBuilder()
    for name, a in (("q", q), ("k", k), ("v", v)):
        gb.add_input(name, TensorType(F32, (B,) + a.shape[1:]))
    feeds = {"q": q, "k": k, "v": v}
    if kind.startswith("float"):  # fed
        gb.add_input("mask", TensorType(F32, ((B,) if mask.ndim == 4 else ()) + mask.shape[
            (1 if mask.ndim == 4 else 0):]))
        feeds["mask"], m = mask, "mask"
    elif kind == "bool_fed":  # a bool input: handed to native code as float32 0 / 1
        gb.add_input("mask", TensorType(BOOL, (sq, sk)))
        feeds["mask"], m = mask, "mask"
    elif kind == "bool_causal":  # a constant
        gb.add_initializer("causal", mask)
        m = "causal"
    else:  # from an int64 padding mask fed, as text models build it
        gb.add_input("ids_mask", TensorType(I64, (B, 1, 1, sk)))
        feeds["ids_mask"] = mask.astype(np.int64)
        m, = gb.add_node("cast", ["ids_mask"], [TensorType(BOOL, (B, 1, 1, sk))],
                         {"dtype": BOOL})
        m = m.name
    o, = gb.add_node("scaled_dot_product_attention", ["q", "k", "v", m],
                     [TensorType(F32, (B, h, sq, dv))])
    y, = gb.add_node("relu", [o.name], [TensorType(F32, (B, h, sq, dv))])
    graph = gb.finish([("o", o.name), ("y", y.name)])
    ref_s, got_s = _sessions(graph)
    src = got_s.plan_source(feeds)
    assert "numpy:" not in src and "attention" in src, src
    got = {kk: t.numpy() for kk, t in got_s.run(feeds).items()}
    ref = {kk: t.numpy() for kk, t in ref_s.run(feeds).items()}
    sc = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2) / np.sqrt(d)
    with np.errstate(invalid="ignore"):
        sc = np.where(mask, sc, -np.inf) if mask.dtype == np.bool_ else sc + mask
        p = np.exp(sc - sc.max(-1, keepdims=True))
        want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    for name, other in (("formula", want), ("numpy", ref["o"])):
        np.testing.assert_array_equal(np.isnan(got["o"]), np.isnan(other), err_msg=name)
        ok = ~np.isnan(other)
        np.testing.assert_allclose(got["o"][ok], other[ok], rtol=1e-4, atol=1e-5, err_msg=name)
    if kind == "bool_padding":
        assert np.isnan(got["o"][0]).all() and not np.isnan(got["o"][1]).any()


def test_bool_input_read_natively_by_numpy_and_returned():
    """A bool input reaches native code as float32 0 / 1, a numpy step as the bool array, and
    comes back as bools when it is an output itself."""
    gb = GraphBuilder()
    gb.add_input("m", TensorType(BOOL, (B, 3)))
    gb.add_input("x", TensorType(F32, (B, 3)))
    w, = gb.add_node("where", ["m", "x", "x"], [TensorType(F32, (B, 3))])
    n, = gb.add_node("neg", [w.name], [TensorType(F32, (B, 3))])
    z, = gb.add_node("where", ["m", n.name, w.name], [TensorType(F32, (B, 3))])
    a, = gb.add_node("all", ["m"], [TensorType(BOOL, (B,))], {"axis": 1})
    graph = gb.finish([("z", z.name), ("all", a.name), ("m", "m")])
    m = np.array([[True, False, True], [True, True, True]])
    x = np.array([[1, 2, np.nan], [-0.0, np.inf, 3]], np.float32)
    ref, got = _run_both(graph, {"m": m, "x": x}, all_native=False)
    np.testing.assert_array_equal(got["z"], np.where(m, -x, x))
    np.testing.assert_array_equal(got["all"], [False, True])
    np.testing.assert_array_equal(got["m"], m)
    assert "numpy: all" in _sessions(graph)[1].plan_source({"m": m, "x": x})


@pytest.mark.parametrize("act", ["gelu_tanh", "gelu", "relu", "tanh", "sigmoid"])
@pytest.mark.parametrize("shared", [False, True])
def test_activation_after_a_reshaped_linear_runs_in_the_gemm(act, shared, isa):
    """GPT-2's MLP: linear on (batch * seq, d), reshape to (batch, seq, 4d), GELU-tanh. An
    activation that is the linear's only reader through reshapes runs in the GEMM's registers
    (no pointwise pass); when the reshaped value has another reader it stays a pass."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((40, 16)).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    gb = GraphBuilder()
    gb.add_input("x", TensorType(F32, (B, S, 16)))
    gb.add_initializer("w", w)
    gb.add_initializer("b", bias)
    x2, = gb.add_node("reshape", ["x"], [TensorType(F32, (B * S, 16))], {"shape": (-1, 16)})
    h, = gb.add_node("linear", [x2.name, "w", "b"], [TensorType(F32, (B * S, 40))])
    r, = gb.add_node("reshape", [h.name], [TensorType(F32, (B, S, 40))], {"shape": (B, S, 40)})
    params = {"approximate": "tanh"} if act == "gelu_tanh" else {}
    y, = gb.add_node("gelu" if act.startswith("gelu") else act, [r.name],
                     [TensorType(F32, (B, S, 40))], params)
    outs = [("y", y.name)] + ([("r", r.name)] if shared else [])
    graph = gb.finish(outs)
    x = (rng.standard_normal((2, 3, 16)) * 2).astype(np.float32)
    x[0, 1, 2], x[1, 1, 0] = np.nan, np.inf
    ref, got = _run_both(graph, {"x": x})
    np.testing.assert_array_equal(np.isnan(got["y"]), np.isnan(ref["y"]))
    ok = ~np.isnan(ref["y"])
    np.testing.assert_allclose(got["y"][ok], ref["y"][ok], rtol=1e-4, atol=1e-5)
    if shared:
        np.testing.assert_allclose(got["r"], ref["r"], rtol=1e-4, atol=1e-5)
    src = _sessions(graph)[1].plan_source({"x": x})
    assert ("pointwise" in src) == shared, src
