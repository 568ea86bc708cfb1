"""Op traits on the record: the records' trait fields are validated, and the traits the passes
and backends rely on are declared (every formula against its kernel is the test kit's
``formula`` check, run over the registry by tests/test_ops_generic.py)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.registry import OpDef, OpTraits, Pointwise, Sample
from onemodel.registry.formula import FormulaError, parse


def test_pointwise_ops_are_declared():
    pointwise = {n for n, op in om.registry.ops().items() if op.traits.pointwise is not None}
    assert {"add", "sub", "mul", "div", "pow", "neg", "exp", "log", "sqrt", "abs", "tanh",
            "sigmoid", "relu", "erf", "gelu", "clip", "maximum", "minimum"} <= pointwise


def test_formula_with_a_param_that_is_no_number_has_no_expression():
    clip = om.registry.get_op("clip")
    assert clip.traits.pointwise.expression(clip.inputs, {"min": None, "max": None}) is None
    assert clip.traits.pointwise.expression(clip.inputs, {"min": "x", "max": None}) is None


@pytest.mark.parametrize("formula, why", [
    ("x +", "not an expression"),
    ("y * 2", "neither an input nor a param"),
    ("os.system(x)", "np.<ufunc>"),
    ("x.real", "np.<ufunc>"),
    ("[x]", "not allowed"),
    ("x if x else 0", "not allowed"),
    ("'a' * x", "not a number"),
    ("x % 2", "not one of"),
    ("0 < x < 1", "single"),
])
def test_bad_formulas_are_refused_naming_the_op(formula, why):
    with pytest.raises(TypeError, match=f"op 'bad'.*{why}"):
        OpDef(name="bad", inputs=("x",), kernel=lambda x: x, infer=lambda x: x, vjp=None,
              samples=lambda rng: [], traits=OpTraits(pointwise=Pointwise(formula=formula)))


def test_parse_accepts_the_grammar():
    parse("np.where(a > 0, a, -a) + special.erf(b) ** 2 / 3.5", ("a", "b"))
    with pytest.raises(FormulaError):
        parse("np.maximum(x, y=1)", ("x",))


def test_trait_kinds_are_checked():
    with pytest.raises(TypeError, match="view"):
        OpTraits(view="diagonal")
    with pytest.raises(TypeError, match="batch"):
        OpTraits(batch="columns")
    with pytest.raises(TypeError, match="traits"):
        OpDef(name="bad", inputs=("x",), kernel=abs, infer=abs, vjp=None,
              samples=lambda rng: [Sample(args=(np.ones(2),))], traits={"pointwise": True})


def test_epilogue_kinds_are_checked_and_read_with_their_parameters():
    with pytest.raises(TypeError, match="epilogue"):
        OpTraits(epilogue="softmax")
    assert OpTraits(epilogue="relu").epilogue_of({}) == ("relu", 0.0, 0.0)
    assert OpTraits().epilogue_of({}) is None
    swish = OpTraits(epilogue=lambda p: ("swish", p["beta"]))
    assert swish.epilogue_of({"beta": 2}) == ("swish", 2.0, 0.0)
    assert swish.epilogue_of({}) is None                      # a missing param: no epilogue
    assert swish.epilogue_of({"beta": "b"}) is None           # not a number (a symbolic size)
    assert OpTraits(epilogue=lambda p: ("clip", 1.0)).epilogue_of({}) is None  # clip takes 2
    assert OpTraits(epilogue=lambda p: "nope").epilogue_of({}) is None


def test_the_activations_declare_their_epilogues():
    ops = om.registry.ops()

    def ep(name, **params):
        op = ops[name]
        full = {k: p.default for k, p in op.params.items() if not p.required}
        return op.traits.epilogue_of({**full, **params})

    assert [ep(n) for n in ("relu", "sigmoid", "tanh", "hardswish")] == [
        (n, 0.0, 0.0) for n in ("relu", "sigmoid", "tanh", "hardswish")]
    assert ep("gelu") == ("gelu", 0.0, 0.0)
    assert ep("gelu", approximate="tanh") == ("gelu_tanh", 0.0, 0.0)
    assert ep("clip", min=0.0, max=6.0) == ("clip", 0.0, 6.0)
    assert ep("clip", max=1.0) == ("clip", -np.inf, 1.0)
    assert ep("clip") is None                                 # no bound: no activation
    assert ep("hardsigmoid") == ("hardsigmoid", pytest.approx(1 / 6), 0.5)
    assert ep("silu") == ("swish", 1.0, 0.0)
    assert ep("swish", beta=1.5) == ("swish", 1.5, 0.0)


def test_views_are_declared():
    ops = om.registry.ops()
    kinds = {n: op.traits.view for n, op in ops.items() if op.traits.view is not None}
    assert {n: kinds.get(n) for n in ("reshape", "flatten", "squeeze", "unsqueeze", "identity",
                                      "transpose", "permute", "expand", "index", "split")} == {
        "reshape": "reshape", "flatten": "reshape", "squeeze": "reshape",
        "unsqueeze": "reshape", "identity": "reshape", "transpose": "permute",
        "permute": "permute", "expand": "expand", "index": "slice", "split": "slice"}
    for n, kind in kinds.items():
        assert kind != "permute" or ops[n].traits.permutation is not None, n
