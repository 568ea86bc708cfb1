"""Sessions follow ONNX/PyTorch semantics for inf and nan without printing numpy's
floating-point warnings; ONEMODEL_FP_ERRORS asks for them (docs/guide/sessions.md)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor

F32_MIN = float(np.finfo(np.float32).min)


def _masked_scores(x):
    # an attention-style mask: adding the float32 minimum twice overflows to -inf on purpose
    return om.ops.softmax(x + F32_MIN + F32_MIN, axis=-1) * 0 + x * x


@pytest.fixture(scope="module")
def traced():
    with np.errstate(all="ignore"):  # eager code keeps numpy's own warnings; not tested here
        return om.trace(_masked_scores, Tensor.zeros(DType.F32, 4, 8), "batch", None)


def _feeds():
    return {"input": np.full((6, 8), 1e30, np.float32)}  # x * x overflows too


BACKENDS = [("numpy", {}), ("threaded", {"threads": 2, "schedule": "parallel"}),
            ("threaded", {"threads": 1})]


@pytest.mark.parametrize("backend, options", BACKENDS)
def test_no_floating_point_warnings_by_default(traced, backend, options, monkeypatch):
    monkeypatch.delenv("ONEMODEL_FP_ERRORS", raising=False)
    with om.Session(traced, backend=backend, **options) as s, warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        out = s.run(_feeds())["output"].numpy()
    assert np.isinf(out).all() or np.isnan(out).any()  # the values ONNX semantics give


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the ones pytest.warns does not match
@pytest.mark.parametrize("backend, options", BACKENDS)
def test_env_var_asks_for_them(traced, backend, options, monkeypatch):
    monkeypatch.setenv("ONEMODEL_FP_ERRORS", "warn")
    with om.Session(traced, backend=backend, **options) as s:
        with pytest.warns(RuntimeWarning, match="overflow"):
            s.run(_feeds())
    monkeypatch.setenv("ONEMODEL_FP_ERRORS", "raise")
    with om.Session(traced, backend=backend, **options) as s:
        with pytest.raises(Exception, match="overflow"):
            s.run(_feeds())


def test_a_bad_setting_names_the_variable(traced, monkeypatch):
    monkeypatch.setenv("ONEMODEL_FP_ERRORS", "loud")
    with pytest.raises(om.OneModelError, match="ONEMODEL_FP_ERRORS='loud'.*ignore, warn"):
        om.Session(traced, backend="numpy")


def test_the_callers_own_error_state_is_left_alone(traced, monkeypatch):
    monkeypatch.delenv("ONEMODEL_FP_ERRORS", raising=False)
    before = np.geterr()
    with om.Session(traced, backend="numpy") as s:
        s.run(_feeds())
    assert np.geterr() == before
