from onemodel.testing.passes import apply, assert_same, const, counts, ops, traced

W, B = const(6), const(6, seed=1)


def _ln(x, axis=-1, eps=1e-5):
    mu = x.mean(axis=axis, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=axis, keepdims=True)
    return d / ops.sqrt(var + eps)


def test_with_weight_and_bias():
    g = traced(lambda x: _ln(x) * W + B, 6)
    out = apply("dead_code_elimination", apply("recognize_layer_norm", g))
    assert counts(out) == {"layer_norm": 1}
    assert out.nodes[0].inputs[1:] != (None, None)
    assert_same(g, out, 6)


def test_plain_and_with_pow():
    g = traced(lambda x: _ln(x), 6)
    out = apply("dead_code_elimination", apply("recognize_layer_norm", g))
    assert counts(out) == {"layer_norm": 1}
    assert_same(g, out, 6)


def test_not_over_another_axis():
    g = traced(lambda x: _ln(x, axis=0), 6)
    assert apply("recognize_layer_norm", g) is g
