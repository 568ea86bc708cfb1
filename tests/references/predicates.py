"""References for isnan and isinf: element by element with math.isnan / math.isinf."""
import math

import numpy as np


def _each(x, test):
    flat = [test(float(v)) for v in np.asarray(x).reshape(-1)]
    return np.array(flat, dtype=bool).reshape(np.shape(x))


def isinf(x, positive=True, negative=True):
    return _each(x, lambda v: math.isinf(v) and ((v > 0 and positive) or (v < 0 and negative)))


REFERENCES = {"isnan": lambda x: _each(x, math.isnan), "isinf": isinf}
