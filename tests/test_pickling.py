"""Pickling of `TracedModel` and `Session` goes through the OneModel format's bytes: nothing but
onemodel's own names is imported on load, and the model is checked as `om.load` checks a file.
So a model travels to process pools (and Ray and Dask workers, which pickle what they ship)."""
from __future__ import annotations

import io
import pickle
import pickletools
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import onemodel as om

from .session_models import cnn, feed, mlp, trace


@pytest.fixture(scope="module")
def model():
    fn, shape = mlp((12, 16, 5))
    return trace(fn, shape), shape


def _globals_of(payload: bytes) -> set[str]:
    """The module-level names a pickle imports on load (GLOBAL / STACK_GLOBAL)."""
    names, strings = set(), []
    for op, arg, _pos in pickletools.genops(io.BytesIO(payload)):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            names.add(f"{strings[-2]}.{strings[-1]}")
        elif op.name == "GLOBAL":
            names.add(arg.replace(" ", "."))
    return names


def test_traced_model_round_trips_through_onemodel_bytes(model):
    traced, shape = model
    payload = pickle.dumps(traced)
    assert _globals_of(payload) == {"onemodel.runtime.traced_model._traced_from_bytes"}
    back = pickle.loads(payload)
    assert isinstance(back, om.TracedModel) and back is not traced
    assert back.input_names == traced.input_names
    x = om.Tensor.from_numpy(feed(shape, 7))  # the symbolic batch travels too
    np.testing.assert_array_equal(back(x).numpy(), traced(x).numpy())


@pytest.mark.parametrize("backend", ["numpy", "compiled", "auto"])
def test_session_unpickles_with_the_same_backend_and_settings(model, backend):
    if backend == "compiled" and "compiled" not in om.backends():
        pytest.skip("the compiled backend is not installed here")
    traced, shape = model
    with traced.create_session(backend=backend, optimization="basic", threads=1,
                               disabled=("constant_folding",)) as s:
        payload = pickle.dumps(s)
        assert _globals_of(payload) == {"onemodel.runtime.session._session_from_bytes"}
        with pickle.loads(payload) as back:
            assert (back.backend, back.optimization, back.threads) == (s.backend, "basic", 1)
            assert back._remake == s._remake
            x = feed(shape, 3)
            np.testing.assert_array_equal(back.run({"input": x})["output"].numpy(),
                                          s.run({"input": x})["output"].numpy())


def test_backend_options_travel(model):
    if "compiled" not in om.backends():
        pytest.skip("the compiled backend is not installed here")
    traced, _ = model
    with traced.create_session(backend="compiled", max_plans=3, cache=False) as s:
        with pickle.loads(pickle.dumps(s)) as back:
            assert back._remake[3] == {"max_plans": 3, "cache": False}


def test_closed_session_and_unplain_options_are_refused(model):
    traced, _ = model
    s = traced.create_session(backend="numpy")
    s.close()
    with pytest.raises(om.SessionError, match="closed session cannot be pickled"):
        pickle.dumps(s)
    s2 = traced.create_session(backend="numpy")
    s2._remake = (*s2._remake[:3], {"hook": print})  # as if a backend took a callable option
    with pytest.raises(om.OneModelError, match="backend option 'hook' is a builtin_function"):
        pickle.dumps(s2)


def test_a_tampered_payload_is_refused_by_the_format_checks(model):
    from onemodel.runtime.traced_model import _traced_from_bytes

    traced, _ = model
    good = pickle.loads(pickle.dumps(traced))
    assert good is not None
    with pytest.raises(om.FormatError, match="not a OneModel file"):
        _traced_from_bytes(b"not a zip at all")
    with pytest.raises(om.OneModelError, match="must hold the model's bytes"):
        _traced_from_bytes("a str")


def _score(session, x):
    """Runs in a worker process: the session arrived pickled."""
    return session.backend, session.run({"input": x})["output"].numpy()


def test_a_process_pool_runs_a_pickled_session():
    fn, shape = cnn()
    traced = trace(fn, shape)
    x = feed(shape, 2)
    with traced.create_session() as s, ProcessPoolExecutor(max_workers=1) as pool:
        backend, out = pool.submit(_score, s, x).result(timeout=120)
        assert backend == s.backend
        np.testing.assert_array_equal(out, s.run({"input": x})["output"].numpy())
