"""References for onemodel-ops-basic."""
import numpy as np

REFERENCES = {
    "add": lambda a, b: a + b,
    "relu": lambda x: np.where(x > 0, x, 0.0),
}
