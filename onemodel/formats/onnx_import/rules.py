"""Rules: how an ONNX op type finds its import rules (op records' ``OnnxSpec.imports``)."""
from __future__ import annotations

from typing import Callable

from .builtin_rules import BUILTIN_RULES


def claimed_rules() -> dict[str, list[tuple[str, Callable]]]:
    """ONNX op type -> [(op name, rule)] from every installed op record."""
    from ...registry import REGISTRY

    table: dict[str, list[tuple[str, Callable]]] = {}
    for name, op in sorted(REGISTRY.tables().ops.items()):
        if op.onnx is None:
            continue
        for op_type, rule in op.onnx.imports.items():
            table.setdefault(op_type, []).append((name, rule))
    return table


def claimed_op_types() -> set[str]:
    """Every ONNX op type the import handles (built-in rules and op records)."""
    return set(BUILTIN_RULES) | set(claimed_rules())
