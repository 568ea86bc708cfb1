"""Loading model files for the command line, with one-line errors for bad paths."""
from __future__ import annotations

import os

from ..errors import OneModelError

EXTENSIONS = (".onemodel", ".onnx")


class CliInputError(OneModelError):
    """A command-line argument names a file of the wrong kind or a malformed value."""


def check_model_path(path: str) -> str:
    if os.path.splitext(path)[1].lower() not in EXTENSIONS:
        raise CliInputError(f"{path}: expected a .onemodel or .onnx file")
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    return path


def load_model(path: str):
    """A TracedModel from a .onemodel or .onnx file."""
    import onemodel as om

    check_model_path(path)
    if path.lower().endswith(".onnx"):
        return om.load_onnx(path)
    return om.load(path)
