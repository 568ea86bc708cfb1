"""The lowering's result is plain, immutable data (issue 26): a `lowered.Program` that the plan
runs, the plan cache stores and loads field by field, and plan_check validates; a rule that
gives up rolls back every field of the lowering's `Trial`, whatever fields it has."""
from __future__ import annotations

import json

import attrs
import numpy as np
import pytest
from onemodel_backend_compiled import plan_codec
from onemodel_backend_compiled.arena import Arena
from onemodel_backend_compiled.lower import Lowering, Trial
from onemodel_backend_compiled.lowered import CLASSES, NativeSegment, Program, PyStep
from onemodel_backend_compiled.rules import RULES

import onemodel as om
from onemodel import Tensor
from onemodel.testing import models


def _where_model():
    """A linear, `where`, then `cumsum` (no lowering: a numpy step between native segments)."""
    w = Tensor.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)

    def fn(x):
        h = om.ops.linear(x, w)
        h = om.ops.where(om.ops.greater(h, 1.0), h, h * 2.0)
        return om.ops.relu(om.ops.cumsum(h, 1) + 1.0)

    return models.trace(fn, (4,)), (4,)


def _mlp():
    fn, shape = models.mlp(sizes=(20, 16, 8))
    return models.trace(fn, shape), shape


def _session_plan(traced, shape, batch=2):
    s = om.Session(traced, backend="compiled", cache=False)
    feeds = {"input": models.feed(shape, batch)}
    s.run(feeds)
    return s, s._compiled.plan({"batch": batch}), feeds


def _same(a, b, where="program") -> None:
    """Field-by-field equality of two programs (arrays by value, records by their fields)."""
    if type(a) in CLASSES.values():
        assert type(b) is type(a), where
        for f in attrs.fields(type(a)):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (tuple, list)):
        assert type(b) is type(a) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif hasattr(a, "items"):
        assert dict(a).keys() == dict(b).keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    else:
        assert a == b or (a is b), (where, a, b)


@pytest.mark.parametrize("build", [_mlp, _where_model])
def test_the_plan_is_a_frozen_program(build):
    traced, shape = build()
    _, plan, _ = _session_plan(traced, shape)
    program = plan.program
    assert type(program) is Program and not hasattr(plan, "lw")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        program.segments = ()
    with pytest.raises(TypeError):
        program.locs["x"] = None  # a read-only mapping
    kinds = {type(s) for s in program.segments}
    assert NativeSegment in kinds
    for seg in program.segments:
        if type(seg) is NativeSegment:
            assert not seg.program.flags.writeable
            assert len(seg.instructions) == len(seg.nodes)
    if build is _where_model:
        assert PyStep in kinds


@pytest.mark.parametrize("build", [_mlp, _where_model])
def test_the_codec_round_trips_every_field(build):
    """Stored as JSON and arrays and decoded, the program is the one lowered, field by field
    (every field of every record: a field added to one is covered here with no change)."""
    traced, shape = build()
    s, plan, feeds = _session_plan(traced, shape)
    ng = s._compiled
    body, arrays = plan_codec.encode(plan.program, ng.graph, ng.ops, ng.numpy_kernels)
    body = json.loads(json.dumps(body))
    back = plan_codec.decode(body, [np.array(a) for a in arrays], ng.graph, {"batch": 2},
                             ng.weights, ng.ops, ng.numpy_kernels)
    _same(plan.program, back)


def test_a_program_of_another_signature_is_refused():
    traced, shape = _mlp()
    s, plan, _ = _session_plan(traced, shape)
    ng = s._compiled
    body, arrays = plan_codec.encode(plan.program, ng.graph, ng.ops, ng.numpy_kernels)
    with pytest.raises(plan_codec.BadEntry, match="another shape signature"):
        plan_codec.decode(json.loads(json.dumps(body)), arrays, ng.graph, {"batch": 3},
                          ng.weights, ng.ops, ng.numpy_kernels)


def _mutate(trial: Trial) -> None:
    """Change every field of a trial, by its type (a field of a new type fails here)."""
    for f in attrs.fields(Trial):
        v = getattr(trial, f.name)
        if type(v) is list:
            v.append(("changed", f.name))
        elif type(v) is dict:
            v[("changed", f.name)] = None
        elif type(v) is set:
            v.add(("changed", f.name))
        elif type(v) is Arena:
            v.alloc(1 << 20)
        elif type(v) is int:
            setattr(trial, f.name, v + 7)
        else:
            raise AssertionError(f"Trial.{f.name}: a field of type {type(v).__name__}")


def test_a_rule_that_gives_up_leaves_no_trace():
    """A rule that changes everything it can reach and then gives up (returns False, or raises
    Unsupported) leaves the program the one lowered with no rule for that op."""
    from onemodel_backend_compiled.pointwise import Unsupported

    traced, shape = _where_model()
    s, plan, _ = _session_plan(traced, shape)
    ng = s._compiled

    def lower(rules):
        lw = Lowering(ng.graph, {"batch": 2}, list(ng.graph.output_names), ng.weights, ng.ops,
                      rules, ng.numpy_kernels)
        return lw.program()

    reference = lower({**RULES, "greater": lambda lw, node, params: False})
    assert "numpy: greater" in reference.source
    for give_up in ("false", "raise"):
        def rule(lw, node, params, give_up=give_up):
            _mutate(lw.trial)
            if give_up == "raise":
                raise Unsupported("gave up")
            return False

        got = lower({**RULES, "greater": rule})
        if give_up == "raise":  # the reason is shown, nothing else differs
            assert "(not native: gave up)" in got.source
            got = attrs.evolve(got, source=reference.source)
        _same(reference, got)
