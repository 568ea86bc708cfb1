"""What a session does with numpy's floating-point warnings (overflow, invalid, divide by zero,
underflow) raised by kernels.

By default nothing: a graph follows ONNX and PyTorch semantics, where such values are results
(an attention mask adds the float32 minimum, which overflows to -inf on purpose), not events. A
user who wants them sets ``ONEMODEL_FP_ERRORS`` to one of numpy's ``np.errstate`` actions
(``warn``, ``raise``, ``print``, ``log``) before creating the session.
"""
from __future__ import annotations

import os

from ..errors import OneModelError

ENV = "ONEMODEL_FP_ERRORS"
CHOICES = ("ignore", "warn", "raise", "print", "log")
DEFAULT = "ignore"


def setting() -> str:
    """The action for kernels' floating-point errors: ``$ONEMODEL_FP_ERRORS`` or "ignore"."""
    value = os.environ.get(ENV, "").strip().lower() or DEFAULT
    if value not in CHOICES:
        raise OneModelError(f"{ENV}={os.environ.get(ENV)!r}: expected one of "
                            f"{', '.join(CHOICES)}")
    return value
