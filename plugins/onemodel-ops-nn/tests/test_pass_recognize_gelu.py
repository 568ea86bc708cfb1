import math

from onemodel.testing.passes import apply, assert_same, counts, ops, traced

C = math.sqrt(2 / math.pi)


def test_exact_form():
    g = traced(lambda x: 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0))), 4)
    out = apply("dead_code_elimination", apply("recognize_gelu", g))
    assert counts(out) == {"gelu": 1}
    assert out.nodes[0].params["approximate"] == "none"
    assert_same(g, out, 4)


def test_tanh_form_any_product_order():
    g = traced(lambda x: x * (1.0 + ops.tanh(C * (x + 0.044715 * x * x * x))) * 0.5, 4)
    out = apply("dead_code_elimination", apply("recognize_gelu", g))
    assert counts(out) == {"gelu": 1}
    assert out.nodes[0].params["approximate"] == "tanh"
    assert_same(g, out, 4)


def test_not_with_other_constants():
    g = traced(lambda x: 0.5 * x * (1.0 + ops.tanh(C * (x + 0.05 * x ** 3))), 4)
    assert apply("recognize_gelu", g) is g
    h = traced(lambda x: 0.4 * x * (1.0 + ops.erf(x / math.sqrt(2.0))), 4)
    assert apply("recognize_gelu", h) is h
