"""ONNX import of FlexAttention (domain ``ai.onnx.preview``, issue 25) and of other domains'
nodes: rules keyed ``"<domain>.<op type>"``, the version read from the model's opset_import.

Each model imports once with symbolic batch and sequence axes and runs on every backend at two
sizes, against onnx's reference evaluator (an independent numpy implementation; ONNX Runtime has
no FlexAttention). The ``score_mod``/``prob_mod`` graphs are converted in place, their own names
renamed, so they may reuse the enclosing graph's names and read its values."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

import onemodel as om  # noqa: E402
from onemodel.formats.onnx_import import (OnnxImportError, OnnxUnsupportedError,  # noqa: E402
                                          from_onnx)

from .onnx_build import check_import_on_every_backend  # noqa: E402

F, F16, I64 = TP.FLOAT, TP.FLOAT16, TP.INT64
PREVIEW = "ai.onnx.preview"
rng = np.random.default_rng(26)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    global rng
    rng = np.random.default_rng(26)


def _model(nodes, inputs, outputs, initializers=(), preview=1):
    opsets = [h.make_opsetid("", 26)] + ([h.make_opsetid(PREVIEW, preview)] if preview else [])
    m = h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info(n, t, s)
                                               for n, t, s in inputs],
                                  [h.make_empty_tensor_value_info(o) for o in outputs],
                                  list(initializers)),
                     opset_imports=opsets)
    m.ir_version = 10
    return m


def _flex(inputs, outputs=("Y",), extra=(), initializers=(), **attrs):
    node = h.make_node("FlexAttention", [n for n, _, _ in inputs[:3]], list(outputs),
                       domain=PREVIEW, **attrs)
    return _model(list(extra) + [node], inputs, outputs, initializers)


def _check(model, feed_sets, rtol=1e-5, atol=1e-6):
    """Against onnx's reference only: ONNX Runtime has no FlexAttention."""
    return check_import_on_every_backend(model, feed_sets, rtol, atol, ort=False)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _graph(name, nodes, dtype=F, initializers=(), inp="scores", out="out"):
    return h.make_graph(nodes, name, [h.make_tensor_value_info(inp, dtype, ["B", "H", "L", "S"])],
                        [h.make_tensor_value_info(out, dtype, ["B", "H", "L", "S"])],
                        list(initializers))


def _causal(dtype=F):
    """Where(q_idx >= k_idx, scores, -inf), the positions read from the scores' shape."""
    nodes = [h.make_node("Shape", ["scores"], ["shape"]),
             h.make_node("Gather", ["shape", "i2"], ["L"], axis=0),
             h.make_node("Gather", ["shape", "i3"], ["S"], axis=0),
             h.make_node("Range", ["zero", "L", "one"], ["qr"]),
             h.make_node("Reshape", ["qr", "qs"], ["qi"]),
             h.make_node("Range", ["zero", "S", "one"], ["kr"]),
             h.make_node("Reshape", ["kr", "ks"], ["ki"]),
             h.make_node("GreaterOrEqual", ["qi", "ki"], ["mask"]),
             h.make_node("Where", ["mask", "scores", "ninf"], ["out"])]
    inits = [h.make_tensor("zero", I64, [], [0]), h.make_tensor("one", I64, [], [1]),
             h.make_tensor("i2", I64, [], [2]), h.make_tensor("i3", I64, [], [3]),
             h.make_tensor("qs", I64, [4], [1, 1, -1, 1]),
             h.make_tensor("ks", I64, [4], [1, 1, 1, -1]),
             h.make_tensor("ninf", dtype, [], [float("-inf")])]
    return _graph("causal", nodes, dtype, inits)


# -- FlexAttention ------------------------------------------------------------------------------
def test_causal_score_mod_with_grouped_heads_and_symbolic_axes():
    m = _flex([("q", F, ["b", 4, "s", 8]), ("k", F, ["b", 2, "s", 8]),
               ("v", F, ["b", 2, "s", 5])], score_mod=_causal())
    feeds = [{"q": _r(b, 4, s, 8), "k": _r(b, 2, s, 8), "v": _r(b, 2, s, 5)}
             for b, s in ((1, 3), (2, 6))]
    graph = _check(m, feeds)
    assert [str(d) for d in graph.inputs[0].type.shape] == ["b", "4", "s", "8"]


def _score_mod_reusing_names(free: str | None = None):
    """score_mod naming its input ``q`` and an initializer ``Y`` (names of the enclosing graph),
    adding the outer value ``free`` when given."""
    nodes = [h.make_node("Mul", ["q", "Y"], ["t" if free else "o"])]
    if free:
        nodes.append(h.make_node("Add", ["t", free], ["o"]))
    return h.make_graph(nodes, "score", [h.make_tensor_value_info("q", F, None)],
                        [h.make_tensor_value_info("o", F, None)],
                        [h.make_tensor("Y", F, [], [0.5])])


def test_modifiers_may_reuse_the_enclosing_graphs_names():
    prob = _graph("prob", [h.make_node("Mul", ["scores", "half"], ["out"])],
                  initializers=[h.make_tensor("half", F, [], [0.7])])
    m = _flex([("q", F, ["b", 2, "l", 4]), ("k", F, ["b", 2, "s", 4]),
               ("v", F, ["b", 2, "s", 3])], score_mod=_score_mod_reusing_names(),
              prob_mod=prob, scale=0.3)
    feeds = [{"q": _r(b, 2, lq, 4), "k": _r(b, 2, s, 4), "v": _r(b, 2, s, 3)}
             for b, lq, s in ((1, 2, 3), (2, 4, 5))]
    _check(m, feeds)


def test_a_modifier_reads_values_of_the_enclosing_graph():
    """score_mod adds the outer input ``bias`` (onnx's reference evaluator runs a modifier
    without the outer scope, so this is checked against numpy)."""
    m = _flex([("q", F, ["b", 2, "l", 4]), ("k", F, ["b", 2, "s", 4]),
               ("v", F, ["b", 2, "s", 3]), ("bias", F, ["l", "s"])],
              score_mod=_score_mod_reusing_names("bias"))
    graph = from_onnx(m)
    for b, lq, s in ((1, 2, 3), (2, 4, 5)):
        feeds = {"q": _r(b, 2, lq, 4), "k": _r(b, 2, s, 4), "v": _r(b, 2, s, 3),
                 "bias": _r(lq, s)}
        scores = feeds["q"] @ feeds["k"].transpose(0, 1, 3, 2) / 2 * 0.5 + feeds["bias"]
        p = np.exp(scores - scores.max(-1, keepdims=True))
        want = (p / p.sum(-1, keepdims=True)) @ feeds["v"]
        for backend in om.backends():
            with om.Session(graph, backend=backend) as sess:
                got = sess.run(feeds)["Y"].numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=backend)


def test_float16_computes_softmax_in_float32_and_precision_double():
    m16 = _flex([("q", F16, ["b", 2, "s", 8]), ("k", F16, ["b", 2, "s", 8]),
                 ("v", F16, ["b", 2, "s", 8])])
    _check(m16, [{n: _r(b, 2, s, 8, dtype=np.float16) for n in "qkv"} for b, s in ((1, 3),
                                                                                   (2, 5))],
           rtol=2e-3, atol=2e-3)
    soft = _graph("cap", [h.make_node("Div", ["scores", "cap"], ["d"]),
                          h.make_node("Tanh", ["d"], ["t"]),
                          h.make_node("Mul", ["t", "cap"], ["out"])], TP.DOUBLE,
                  [h.make_tensor("cap", TP.DOUBLE, [], [2.0])])
    m64 = _flex([("q", F, ["b", 2, "s", 4]), ("k", F, ["b", 2, "s", 4]),
                 ("v", F, ["b", 2, "s", 4])], softmax_precision=11, score_mod=soft)
    _check(m64, [{n: _r(b, 2, s, 4) for n in "qkv"} for b, s in ((1, 2), (3, 4))])


def _nested_if():
    branch = h.make_graph([h.make_node("Identity", ["scores"], ["o"])], "b", [],
                          [h.make_tensor_value_info("o", F, None)])
    return _graph("nested", [h.make_node("If", ["c"], ["out"], then_branch=branch,
                                         else_branch=branch)])


@pytest.mark.parametrize("attrs,inputs,match", [
    ({"softmax_precision": 16}, None, "softmax_precision 16"),
    ({}, [("q", F, [1, 3, 2, 4]), ("k", F, [1, 2, 2, 4]), ("v", F, [1, 2, 2, 4])],
     "3 query heads are not a multiple of 2 key/value heads"),
    ({}, [("q", F, [1, 2, 4]), ("k", F, [1, 2, 4]), ("v", F, [1, 2, 4])], "must be rank 4"),
    ({}, [("q", F, [1, 2, 3, "e"]), ("k", F, [1, 2, 3, "e"]), ("v", F, [1, 2, 3, 4])],
     "fixed head size to compute the default scale"),
    ({"score_mod": _graph("sum", [h.make_node("ReduceSum", ["scores"], ["out"],
                                              keepdims=0)])},
     None, "score_mod must keep its input's shape"),
    ({"prob_mod": _nested_if()}, None, "prob_mod holds a If node with a subgraph"),
])
def test_refusals_name_the_attribute(attrs, inputs, match):
    inputs = inputs or [("q", F, [1, 2, 3, 4]), ("k", F, [1, 2, 3, 4]), ("v", F, [1, 2, 3, 4]),
                        ("c", TP.BOOL, [])]
    m = _flex(inputs, **attrs)
    with pytest.raises(OnnxUnsupportedError, match=match) as info:
        from_onnx(m)
    assert "FlexAttention" in str(info.value)


# -- other domains ------------------------------------------------------------------------------
def test_rules_are_found_by_domain_and_op_type():
    """The preview rule does not take a default-domain node of the same op type, and a preview
    op nothing claims is refused under its domain's name."""
    qkv = [("q", F, [1, 2, 3, 4]), ("k", F, [1, 2, 3, 4]), ("v", F, [1, 2, 3, 4])]
    plain = _model([h.make_node("FlexAttention", ["q", "k", "v"], ["Y"])], qkv, ["Y"])
    with pytest.raises(OnnxUnsupportedError, match=r"op type\(s\): FlexAttention \(1 node\)"):
        from_onnx(plain)
    other = _model([h.make_node("NoSuchOp", ["q"], ["Y"], domain=PREVIEW)], qkv[:1], ["Y"])
    with pytest.raises(OnnxUnsupportedError, match=r"ai\.onnx\.preview\.NoSuchOp \(1 node\)"):
        from_onnx(other)


def test_arity_is_checked_against_the_domains_schema_at_its_version():
    qkv = [("q", F, [1, 2, 3, 4]), ("k", F, [1, 2, 3, 4]), ("v", F, [1, 2, 3, 4])]
    four = _model([h.make_node("FlexAttention", ["q", "k", "v", "q"], ["Y"], domain=PREVIEW)],
                  qkv, ["Y"])
    with pytest.raises(OnnxImportError, match="has 4 inputs; FlexAttention-1 takes 3"):
        from_onnx(four)


def test_the_context_reads_each_domains_version():
    from onemodel.formats.onnx_import.convert import _opsets

    m = _flex([("q", F, [1, 2, 3, 4]), ("k", F, [1, 2, 3, 4]), ("v", F, [1, 2, 3, 4])])
    assert _opsets(m) == {"": 26, PREVIEW: 1}
    from onemodel.formats.onnx_import import ImportContext

    ctx = ImportContext(26, _opsets(m))
    assert ctx.opset_of("ai.onnx") == 26 and ctx.opset_of(PREVIEW) == 1
    assert ctx.opset_of("com.example") is None


def test_a_rule_key_naming_the_default_domain_is_the_bare_op_type():
    from onemodel.formats.onnx_import.rules import _normal_key, op_key

    assert _normal_key("ai.onnx.Relu") == "Relu" == op_key("ai.onnx", "Relu") == op_key("", "Relu")
    assert _normal_key("ai.onnx.preview.FlexAttention") == op_key(PREVIEW, "FlexAttention")
