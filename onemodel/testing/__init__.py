"""The test kit for op, kernel and backend authors (and the project's own generic tests).

* ``check_op(record_or_name, reference=None)``: every sample of the op through every check in
  `op_checks` — an independent reference formula, inference against eager, the gradient against
  float64 finite differences, a trace, a Session on every installed backend, and an ONNX round
  trip (through ONNX Runtime when installed) where the op has a mapping.
* ``check_backend(name)``: the standard models (`backend_checks.MODELS`) and every installed
  op's samples on one backend, against the reference interpreter.
* The sample helpers (`sample_tensors`, `call_sample`, `bind_sample`, `sample_graph`) are the one
  way to turn a `Sample` into a call or a one-node graph.
* For a plugin's own tests (imported as submodules, so they run from an installed copy too):
  `models` (small op-written models and their feeds, for backends), `passes` (running and
  comparing one pass) and `numerics` (results with NaN and infinities against a reference).

Each failure is an `OpCheckError` (an AssertionError) naming the op, the sample and the check.
"""
from __future__ import annotations

from .backend_checks import MODELS, check_backend, check_model
from .kit import check_op, registered_op
from .op_checks import (CHECKS, check_epilogue, check_formula, check_gradient, check_inference,
                        check_onnx, check_reference, check_sessions, check_trace)
from .report import Check, CheckReport, OpCheckError
from .samples import (bind_sample, call_sample, flat, output_types, sample_arrays, sample_call,
                      sample_graph, sample_tensors)

__all__ = ["check_op", "check_backend", "check_model", "registered_op", "MODELS", "CHECKS",
           "check_reference", "check_inference", "check_gradient", "check_trace",
           "check_formula", "check_epilogue", "check_sessions", "check_onnx", "Check", "CheckReport",
           "OpCheckError",
           "sample_arrays", "sample_tensors", "sample_call", "call_sample", "bind_sample",
           "output_types", "sample_graph", "flat"]
