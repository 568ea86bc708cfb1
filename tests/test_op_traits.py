"""Op traits on the record: every pointwise formula agrees with its op's kernel, the records'
trait fields are validated, and the traits the passes and backends rely on are declared."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core.pointwise import function
from onemodel.registry import OpDef, OpTraits, Pointwise, Sample
from onemodel.registry.formula import FormulaError, parse


def _pointwise_cases():
    rng = np.random.default_rng(1)
    for name, op in sorted(om.registry.ops().items()):
        if op.traits.pointwise is None:
            continue
        for i, s in enumerate(op.samples(rng)):
            yield pytest.param(op, s, id=f"{name}-{s.name or i}")


@pytest.mark.parametrize("op, sample", list(_pointwise_cases()))
def test_formula_matches_kernel(op, sample):
    arrays = [np.asarray(a) for a in sample.args]
    floats = [a for a in arrays if a.dtype.kind == "f"]
    if not floats or len({a.dtype for a in floats}) != 1 or any(
            a.dtype.kind not in "fb" for a in arrays):
        pytest.skip("formulas are promised for float inputs of one dtype only")
    names = tuple(i.rstrip("?") for i in op.inputs)
    params = {k: p.default for k, p in op.params.items() if not p.required}
    params.update(sample.params)
    expr = op.traits.pointwise.expression(op.inputs, params)
    assert expr is not None, f"{op.name}: no formula for params {params}"
    got = function(expr, names)(*arrays)
    want = op.kernel(*arrays, **params)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, np.float64),
                               rtol=1e-6, atol=1e-12, err_msg=op.name)


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
