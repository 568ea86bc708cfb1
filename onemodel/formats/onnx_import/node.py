"""`OnnxNode`: the decoded view of one ONNX node that import rules read."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .errors import OnnxUnsupportedError


class OnnxNode:
    """The view of one ONNX node that import rules get."""

    def __init__(self, op_type: str, inputs, outputs, attrs: Mapping[str, Any], name: str = "",
                 domain: str = ""):
        self.op_type = op_type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs)
        self.name = name
        self.domain = domain

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def tensor(self, name: str, default: Any = None) -> Any:
        """A ``TENSOR`` attribute as a numpy array (``default`` when absent); any other kind of
        value refuses the node."""
        v = self.attrs.get(name)
        if v is None:
            return default
        if not isinstance(v, np.ndarray):
            raise OnnxUnsupportedError(f"{self.describe()}: attribute {name!r} must be a tensor, "
                                       f"got {type(v).__name__}")
        return v

    def input(self, i: int) -> str:
        return self.inputs[i] if i < len(self.inputs) else ""

    def describe(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"{self.op_type} node{label} (outputs {', '.join(o for o in self.outputs if o)})"

    def __repr__(self):
        return f"OnnxNode({self.op_type}, {self.inputs} -> {self.outputs}, {self.attrs})"
