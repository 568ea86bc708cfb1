import math

import numpy as np

from onemodel.core.special import erf


def _ref(x):
    return np.array([math.erf(v) for v in np.asarray(x, dtype=np.float64).ravel()]).reshape(np.shape(x))


def test_erf_accuracy_float64():
    x = np.linspace(-6.0, 6.0, 20001)
    x = np.concatenate([x, [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 1e-12, -1e-300, 0.5, 3.999999]])
    err = np.max(np.abs(erf(x) - _ref(x)))
    assert err <= 2e-7
    assert err <= 1e-14  # Cody's approximation is double-precision accurate


def test_erf_random_and_relative_small():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(5000) * 3
    np.testing.assert_allclose(erf(x), _ref(x), rtol=1e-13, atol=1e-15)
    tiny = np.array([1e-8, -1e-5, 1e-30])
    np.testing.assert_allclose(erf(tiny), _ref(tiny), rtol=1e-14)


def test_erf_dtypes_and_shapes():
    x32 = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    y32 = erf(x32)
    assert y32.dtype == np.float32 and y32.shape == (3, 4)
    np.testing.assert_allclose(y32, _ref(x32), atol=2e-7)
    assert erf(np.float64(0.3)).dtype == np.float64
    assert erf(np.array([0.5], dtype=np.float16)).dtype == np.float16
    assert erf(np.array(0.3)).shape == ()
    assert erf(np.zeros((0, 2))).shape == (0, 2)


def test_erf_limits_and_nan():
    x = np.array([np.inf, -np.inf, 30.0, -30.0, np.nan])
    y = erf(x)
    assert y[0] == 1.0 and y[1] == -1.0 and y[2] == 1.0 and y[3] == -1.0
    assert np.isnan(y[4])
    assert erf(np.array([1, 2])).dtype == np.float64
    assert math.copysign(1.0, erf(np.array([-0.0]))[0]) == -1.0
