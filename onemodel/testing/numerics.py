"""Checks backend tests share (the project's and plugins'): a result against a reference that
holds NaN or infinities."""
from __future__ import annotations

import numpy as np


def assert_specials_then_close(got, ref, rtol: float, atol: float, err_msg: str = ""):
    """NaN, +inf and -inf exactly where ``ref`` has them, every finite value within
    ``rtol``/``atol``; returns the mask of ``ref``'s finite values."""
    got, ref = np.asarray(got), np.asarray(ref)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=err_msg)
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref), err_msg=err_msg)
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref), err_msg=err_msg)
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=rtol, atol=atol, err_msg=err_msg)
    return finite


__all__ = ["assert_specials_then_close"]
