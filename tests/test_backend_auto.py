"""``backend="auto"``, the default: the highest-ranked installed backend that runs the graph,
chosen once per session and shown by ``session.backend``, ``repr`` and ``onemodel info``."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core.backend_choice import choose_backend, ranked
from onemodel.registry import BackendDef, hookimpl
from onemodel.registry.manager import REGISTRY

from .session_models import feed, mlp, trace


def _expected_auto() -> str:
    """The rule written again from the records: compiled when installed, else numpy."""
    table = REGISTRY.tables().backends
    return "compiled" if "compiled" in table else "numpy"


@pytest.fixture(scope="module")
def model():
    fn, shape = mlp((12, 16, 5))
    return trace(fn, shape), shape


def test_default_session_is_auto_and_says_what_it_chose(model):
    traced, shape = model
    with traced.create_session() as s:
        assert s.backend == _expected_auto()
        assert s.backend_choice is not None and s.backend_choice.chosen == s.backend
        assert f"backend={s.backend!r} (auto)" in repr(s)
        x = feed(shape, 4)
        with om.Session(traced, backend="numpy") as ref:
            want = ref.run({"input": x})["output"].numpy()
        np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), want,
                                   rtol=1e-5, atol=1e-6)


def test_a_named_backend_wins_and_is_not_marked_auto(model):
    traced, _ = model
    with traced.create_session(backend="numpy") as s:
        assert s.backend == "numpy" and s.backend_choice is None
        assert "(auto)" not in repr(s)


def test_traced_call_and_om_session_use_auto(model, tmp_path):
    traced, shape = model
    x = feed(shape, 2)
    out = traced(om.Tensor.from_numpy(x))
    assert traced._session.backend == _expected_auto()
    path = tmp_path / "m.onemodel"
    traced.save(path)
    with om.Session(str(path)) as s:
        assert s.backend == _expected_auto()
        np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), out.numpy(),
                                   rtol=1e-6, atol=1e-6)
    with om.load(path).create_session() as s:
        assert s.backend == _expected_auto()


class _Picky:
    """A third-party backend that ranks above everything but refuses graphs with a wide input."""

    @hookimpl
    def onemodel_backends(self):
        from onemodel.core.plan import PlanBackend

        def numpy_create(**options):
            return PlanBackend("numpy", **options)

        def supports(graph):
            if any(d == 12 for v in graph.inputs for d in v.shape):
                return "inputs of width 12 are not supported"
            return None

        return (BackendDef(name="picky", create=numpy_create, auto_rank=1000,
                           supports=supports),
                BackendDef(name="quiet", create=numpy_create))


def test_supports_and_rank_come_from_the_record(registered, model):
    traced, _ = model
    registered(_Picky(), "picky-backend")
    with traced.create_session() as s:  # width 12: picky says no, the next one runs it
        assert s.backend == _expected_auto()
        assert s.backend_choice.passed_over == (("picky", "inputs of width 12 are not "
                                                 "supported"),)
        assert "picky: inputs of width 12" in str(s.backend_choice)
    fn, shape = mlp((8, 4))
    with trace(fn, shape).create_session() as s:
        assert s.backend == "picky" and s.backend_choice.passed_over == ()
    assert "quiet" not in [b.name for b in ranked(REGISTRY.tables().backends)]


def test_no_backend_left_is_a_clear_error(model):
    traced, _ = model
    table = {"numpy": BackendDef(name="numpy", create=lambda **o: None, auto_rank=0,
                                 supports=lambda g: "never")}
    with pytest.raises(om.OneModelError, match=r"backend 'auto' found no backend.*numpy: never"):
        choose_backend(traced.graph, table)
    with pytest.raises(om.OneModelError, match="none is installed that auto may choose"):
        choose_backend(traced.graph, {"x": BackendDef(name="x", create=lambda **o: None)})


def test_a_supports_that_raises_is_passed_over_with_its_error(model):
    traced, _ = model

    def broken(graph):
        raise RuntimeError("plugin bug")

    table = {"bad": BackendDef(name="bad", create=lambda **o: None, auto_rank=5,
                               supports=broken),
             "numpy": BackendDef(name="numpy", create=lambda **o: None, auto_rank=0)}
    choice = choose_backend(traced.graph, table)
    assert choice.chosen == "numpy"
    assert choice.passed_over == (("bad", "its supports() raised RuntimeError: plugin bug"),)


def test_auto_is_a_reserved_backend_name():
    with pytest.raises(ValueError, match="'auto' is reserved"):
        BackendDef(name="auto", create=lambda **o: None)


def test_onemodel_info_names_the_backend_auto_takes(model, tmp_path, capsys):
    from onemodel.cli import main

    traced, _ = model
    path = tmp_path / "m.onemodel"
    traced.save(path)
    assert main(["info", str(path)]) == 0
    assert f"backend: {_expected_auto()} (auto)" in capsys.readouterr().out
