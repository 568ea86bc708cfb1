"""ONNX import of the attention family (issue 25): Attention (opsets 23-25: heads, GQA, scale,
softcap, softmax_precision, qk_matmul_output_mode, masks, caches, nonpad_kv_seqlen, windows),
RotaryEmbedding, SwiGLU, CausalConvWithState and LinearAttention. Each model imports once with
symbolic batch and sequence axes and runs on every backend at two sizes, against onnx's
reference evaluator (an independent numpy implementation) and, where installed, ONNX Runtime;
refusals name the attribute or input they cannot do."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402

from .onnx_build import check_import_on_every_backend, ort_or_none, reference_run  # noqa: E402

F, F16, I64, BOOL = TP.FLOAT, TP.FLOAT16, TP.INT64, TP.BOOL
rng = np.random.default_rng(23)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    global rng
    rng = np.random.default_rng(23)


def _model(node, inputs, outputs, opset):
    m = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info(n, t, s)
                                                for n, t, s in inputs],
                                  [h.make_empty_tensor_value_info(o) for o in outputs if o]),
                     opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _attention(inputs, outputs, opset=23, **attrs):
    names = [n for n, _, _ in inputs]
    node = h.make_node("Attention", names, outputs, **attrs)
    return _model(node, [(n, t, s) for n, t, s in inputs if n], outputs, opset)


# -- Attention ----------------------------------------------------------------------------------
def test_attention_4d_float_mask_scale_softcap_symbolic_axes():
    m = _attention([("q", F, ["b", 2, "sq", 4]), ("k", F, ["b", 2, "skv", 4]),
                    ("v", F, ["b", 2, "skv", 3]), ("mask", F, ["sq", "skv"])], ["y"],
                   scale=0.3, softcap=2.0)
    feeds = [{"q": _r(b, 2, sq, 4), "k": _r(b, 2, skv, 4), "v": _r(b, 2, skv, 3),
              "mask": _r(sq, skv)} for b, sq, skv in ((1, 3, 5), (2, 4, 6))]
    graph = check_import_on_every_backend(m, feeds)
    assert [str(d) for d in graph.inputs[0].type.shape] == ["b", "2", "sq", "4"]


@pytest.mark.parametrize("mode", [0, 2])
def test_attention_3d_gqa_causal_cache_and_qk_output(mode):
    """3-D inputs with 4 query heads over 2 key/value heads, a past cache of symbolic length
    (the causal frontier is offset by it), present outputs and the raw (mode 0) or biased
    (mode 2) scores. ONNX Runtime writes the float's lowest value where the spec's causal bias
    is -inf, so mode 2 is checked against onnx's reference only."""
    m = _attention([("q", F, ["b", "s", 16]), ("k", F, ["b", "s", 8]), ("v", F, ["b", "s", 6]),
                    ("", F, None), ("pk", F, ["b", 2, "p", 4]), ("pv", F, ["b", 2, "p", 3])],
                   ["y", "present_k", "present_v", "qk"], is_causal=1, q_num_heads=4,
                   kv_num_heads=2, qk_matmul_output_mode=mode)
    feeds = [{"q": _r(b, s, 16), "k": _r(b, s, 8), "v": _r(b, s, 6), "pk": _r(b, 2, p, 4),
              "pv": _r(b, 2, p, 3)} for b, s, p in ((1, 2, 3), (2, 3, 1))]
    check_import_on_every_backend(m, feeds, ort=mode != 2)


def test_attention_nonpad_kv_seqlen_causal_bool_mask():
    """Opset 24's external cache: per-batch valid lengths shift the causal frontier and pad the
    keys; a boolean mask composes with both; a row no key may attend is zero."""
    m = _attention([("q", F, ["b", 2, 3, 4]), ("k", F, ["b", 2, 6, 4]), ("v", F, ["b", 2, 6, 4]),
                    ("mask", BOOL, [3, 6]), ("", F, None), ("", F, None), ("n", I64, ["b"])],
                   ["y"], opset=24, is_causal=1)
    feeds = [{"q": _r(b, 2, 3, 4), "k": _r(b, 2, 6, 4), "v": _r(b, 2, 6, 4),
              "mask": rng.random((3, 6)) > 0.3, "n": n}
             for b, n in ((2, np.array([6, 2])), (3, np.array([4, 1, 5])))]
    check_import_on_every_backend(m, feeds)


@pytest.mark.parametrize("left,right", [(2, 1), (1, -1), (-1, 0)])
def test_attention_sliding_window_and_probabilities(left, right):
    """Opset 25's left/right windows with a short float mask (padded with -inf) and the
    post-softmax probabilities as the fourth output (mode 3)."""
    m = _attention([("q", F, ["b", 2, "s", 4]), ("k", F, ["b", 2, "s", 4]),
                    ("v", F, ["b", 2, "s", 4]), ("mask", F, ["s", 2])], ["y", "", "", "qk"],
                   opset=25, left_window_size=left, right_window_size=right,
                   qk_matmul_output_mode=3)
    feeds = [{"q": _r(b, 2, s, 4), "k": _r(b, 2, s, 4), "v": _r(b, 2, s, 4),
              "mask": _r(s, 2)} for b, s in ((1, 2), (2, 5))]
    with pytest.raises(OnnxUnsupportedError, match="attn_mask's last axis 2 and the total key "
                                                   "length s differ by a symbolic amount"):
        from_onnx(m)
    fixed = _attention([("q", F, ["b", 2, 5, 4]), ("k", F, ["b", 2, 5, 4]),
                        ("v", F, ["b", 2, 5, 4]), ("mask", F, [5, 2])], ["y", "", "", "qk"],
                       opset=25, left_window_size=left, right_window_size=right,
                       qk_matmul_output_mode=3)
    check_import_on_every_backend(fixed, feeds[1:] + [{"q": _r(3, 2, 5, 4), "k": _r(3, 2, 5, 4),
                                                       "v": _r(3, 2, 5, 4), "mask": _r(5, 2)}])


def test_attention_float16_softmax_in_float32():
    m = _attention([("q", F16, ["b", 2, 3, 8]), ("k", F16, ["b", 2, 4, 8]),
                    ("v", F16, ["b", 2, 4, 8])], ["y", "", "", "qk"], is_causal=1,
                   softmax_precision=1, qk_matmul_output_mode=1)
    feeds = [{n: _r(b, 2, s, 8, dtype=np.float16) for n, s in (("q", 3), ("k", 4), ("v", 4))}
             for b in (1, 2)]
    check_import_on_every_backend(m, feeds, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("attrs,inputs,match", [
    ({"softmax_precision": 16}, None, "softmax_precision 16"),
    ({"qk_matmul_output_mode": 4}, None, "qk_matmul_output_mode 4"),
    ({}, [("q", F, [1, 3, 8]), ("k", F, [1, 3, 8]), ("v", F, [1, 3, 8])],
     "3-D Q, K and V need the q_num_heads and kv_num_heads attributes"),
    ({"q_num_heads": 3, "kv_num_heads": 2}, [("q", F, [1, 3, 6]), ("k", F, [1, 3, 4]),
                                             ("v", F, [1, 3, 4])],
     "3 query heads are not a multiple of 2 key/value heads"),
    ({}, [("q", F, [1, 2, 3, "e"]), ("k", F, [1, 2, 3, "e"]), ("v", F, [1, 2, 3, 4])],
     "fixed head size to compute the default scale"),
])
def test_attention_refusals_name_the_attribute(attrs, inputs, match):
    inputs = inputs or [("q", F, [1, 2, 3, 4]), ("k", F, [1, 2, 3, 4]), ("v", F, [1, 2, 3, 4])]
    m = _attention(inputs, ["y"], **attrs)
    with pytest.raises(OnnxUnsupportedError, match=match) as info:
        from_onnx(m)
    assert "Attention" in str(info.value)


# -- RotaryEmbedding ----------------------------------------------------------------------------
def _cache(n, half):
    angles = np.arange(n)[:, None] * (1.0 / 100 ** (np.arange(half) / half))[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def test_rotary_embedding_4d_position_ids_symbolic_axes():
    node = h.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"])
    m = _model(node, [("x", F, ["b", 2, "s", 8]), ("cos", F, [16, 4]), ("sin", F, [16, 4]),
                      ("pos", I64, ["b", "s"])], ["y"], 23)
    cos, sin = _cache(16, 4)
    feeds = [{"x": _r(b, 2, s, 8), "cos": cos, "sin": sin,
              "pos": rng.integers(0, 16, (b, s)).astype(np.int64)} for b, s in ((1, 3), (2, 5))]
    check_import_on_every_backend(m, feeds)


def test_rotary_embedding_3d_interleaved_partial_without_position_ids():
    node = h.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], num_heads=2,
                       interleaved=1, rotary_embedding_dim=4)
    m = _model(node, [("x", F, ["b", "s", 12]), ("cos", F, ["b", "s", 2]),
                      ("sin", F, ["b", "s", 2])], ["y"], 23)
    feeds = []
    for b, s in ((1, 3), (2, 4)):
        angles = rng.random((b, s, 2)).astype(np.float32) * 3
        feeds.append({"x": _r(b, s, 12), "cos": np.cos(angles), "sin": np.sin(angles)})
    check_import_on_every_backend(m, feeds)


def test_rotary_embedding_refuses_an_odd_rotary_dim():
    node = h.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], rotary_embedding_dim=3)
    m = _model(node, [("x", F, [1, 2, 3, 8]), ("cos", F, [1, 3, 1]), ("sin", F, [1, 3, 1])],
               ["y"], 23)
    with pytest.raises(OnnxUnsupportedError, match="rotary_embedding_dim 3 must be even"):
        from_onnx(m)


# -- SwiGLU -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,alpha", [(np.float32, 1.0), (np.float32, 1.702),
                                         (np.float16, 0.5)])
def test_swiglu_against_its_formula(dtype, alpha):
    """ONNX Runtime 1.32 has no Swish kernel for SwiGLU's function body: the reference here is
    the formula in float32 (rounded once for float16) and onnx's evaluator."""
    node = h.make_node("SwiGLU", ["a", "b"], ["y"], alpha=alpha)
    t = F16 if dtype == np.float16 else F
    m = _model(node, [("a", t, ["n", 6]), ("b", t, ["n", 6])], ["y"], 28)
    graph = from_onnx(m)
    for n in (1, 4):
        a, b = _r(n, 6, dtype=dtype), _r(n, 6, dtype=dtype)
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        want = (a32 / (1 + np.exp(-alpha * a32)) * b32).astype(dtype)
        for backend in om.backends():
            with om.Session(graph, backend=backend) as sess:
                got = sess.run({"a": a, "b": b})["y"].numpy()
            assert got.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == np.float16 else 1e-6,
                                       atol=1e-6, err_msg=backend)
    if dtype == np.float32:
        check_import_on_every_backend(m, [{"a": _r(3, 6), "b": _r(3, 6)}], ort=False)


# -- CausalConvWithState ------------------------------------------------------------------------
@pytest.mark.parametrize("past,bias,activation", [(True, True, "silu"), (False, False, "none"),
                                                  (False, True, "swish")])
def test_causal_conv_with_state_symbolic_batch_and_length(past, bias, activation):
    names = ["x", "w", "bias" if bias else "", "past" if past else ""]
    node = h.make_node("CausalConvWithState", names, ["y", "state"], activation=activation)
    ins = [("x", F, ["b", 3, "l"]), ("w", F, [3, 1, 4])]
    ins += [("bias", F, [3])] if bias else []
    ins += [("past", F, ["b", 3, 3])] if past else []
    m = _model(node, ins, ["y", "state"], 27)
    feeds = []
    for b, length in ((1, 2), (2, 7)):
        f = {"x": _r(b, 3, length), "w": _r(3, 1, 4)}
        if bias:
            f["bias"] = _r(3)
        if past:
            f["past"] = _r(b, 3, 3)
        feeds.append(f)
    check_import_on_every_backend(m, feeds)


def test_causal_conv_with_state_refuses_an_unknown_activation():
    node = h.make_node("CausalConvWithState", ["x", "w"], ["y", "state"], activation="gelu")
    m = _model(node, [("x", F, [1, 3, 5]), ("w", F, [3, 1, 2])], ["y", "state"], 27)
    with pytest.raises(OnnxUnsupportedError, match="activation 'gelu'"):
        from_onnx(m)


# -- LinearAttention ----------------------------------------------------------------------------
@pytest.mark.parametrize("rule,decay_last", [("linear", None), ("gated", 2), ("delta", None),
                                             ("gated_delta", 8)])
def test_linear_attention_rules_gqa_with_past(rule, decay_last):
    """4 query heads over 2 key/value heads (d_k 4, d_v 3), a past state, symbolic batch."""
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    names = ["q", "k", "v", "past", "decay" if gating else "", "beta" if delta else ""]
    node = h.make_node("LinearAttention", names, ["y", "state"], q_num_heads=4, kv_num_heads=2,
                       update_rule=rule)
    ins = [("q", F, ["b", 3, 16]), ("k", F, ["b", 3, 8]), ("v", F, ["b", 3, 6]),
           ("past", F, ["b", 2, 4, 3])]
    ins += [("decay", F, ["b", 3, decay_last])] if gating else []
    ins += [("beta", F, ["b", 3, 2])] if delta else []
    m = _model(node, ins, ["y", "state"], 27)
    feeds = []
    for b in (1, 2):
        k = _r(b, 3, 8)
        k /= np.linalg.norm(k.reshape(b, 3, 2, 4), axis=-1).repeat(4, axis=-1).reshape(b, 3, 8)
        f = {"q": _r(b, 3, 16), "k": k, "v": _r(b, 3, 6), "past": _r(b, 2, 4, 3) * 0.1}
        if gating:
            f["decay"] = -rng.random((b, 3, decay_last)).astype(np.float32)
        if delta:
            f["beta"] = rng.random((b, 3, 2)).astype(np.float32)
        feeds.append(f)
    check_import_on_every_backend(m, feeds, rtol=1e-4, atol=1e-5)


def test_linear_attention_refuses_a_symbolic_sequence_and_a_missing_input():
    node = h.make_node("LinearAttention", ["q", "k", "v"], ["y", "s"], q_num_heads=1,
                       kv_num_heads=1, update_rule="linear")
    m = _model(node, [("q", F, [1, "t", 4]), ("k", F, [1, "t", 4]), ("v", F, [1, "t", 4])],
               ["y", "s"], 27)
    with pytest.raises(OnnxUnsupportedError, match="sequence, whose length must be fixed"):
        from_onnx(m)
    node = h.make_node("LinearAttention", ["q", "k", "v"], ["y", "s"], q_num_heads=1,
                       kv_num_heads=1)
    m = _model(node, [("q", F, [1, 2, 4]), ("k", F, [1, 2, 4]), ("v", F, [1, 2, 4])],
               ["y", "s"], 27)
    with pytest.raises(OnnxUnsupportedError, match="update_rule 'gated_delta' needs the decay "
                                                   "input"):
        from_onnx(m)


# -- export back --------------------------------------------------------------------------------
def test_imported_attention_exports_back_at_every_size():
    """The imported ops export as standard ONNX ops, symbolic sizes (the cache length that
    offsets the causal frontier) computed in the file: the file matches onnx's reference at
    two sizes in ONNX Runtime."""
    pytest.importorskip("onnxruntime")
    from onemodel.formats.onnx_export import to_onnx

    m = _attention([("q", F, ["b", "s", 16]), ("k", F, ["b", "s", 8]), ("v", F, ["b", "s", 6]),
                    ("", F, None), ("pk", F, ["b", 2, "p", 4]), ("pv", F, ["b", 2, "p", 3])],
                   ["y", "present_k", "present_v"], is_causal=1, q_num_heads=4,
                   kv_num_heads=2)
    back = to_onnx(from_onnx(m))
    assert "Attention" not in {n.op_type for n in back.graph.node}
    for b, s, p in ((1, 2, 3), (2, 3, 1)):
        feeds = {"q": _r(b, s, 16), "k": _r(b, s, 8), "v": _r(b, s, 6), "pk": _r(b, 2, p, 4),
                 "pv": _r(b, 2, p, 3)}
        for got, want in zip(ort_or_none(back, feeds), reference_run(m, feeds)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
