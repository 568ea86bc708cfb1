"""Rules: how an ONNX node finds its import rules (op records' ``OnnxSpec.imports``, the built-in
ones) and how they are applied: in turn, until one converts the node or all refuse it."""
from __future__ import annotations

from typing import Callable

from ...errors import FormatError
from .builtin_rules import BUILTIN_RULES
from .context import ImportContext
from .errors import OnnxDeclined, OnnxImportError, OnnxUnsupportedError
from .node import OnnxNode
from .sizes import SYMBOLIC_OPS

Rules = dict[str, list[tuple[str, Callable]]]


def claimed_rules() -> Rules:
    """ONNX op type -> [(op name, rule)] from every installed op record."""
    from ...registry import REGISTRY

    table: Rules = {}
    for name, op in sorted(REGISTRY.tables().ops.items()):
        if op.onnx is None:
            continue
        for op_type, rule in op.onnx.imports.items():
            table.setdefault(op_type, []).append((name, rule))
    return table


def claimed_op_types() -> set[str]:
    """Every ONNX op type the import handles (built-in rules and op records)."""
    return set(BUILTIN_RULES) | set(claimed_rules())


def handled(node: OnnxNode, rules: Rules) -> bool:
    """Whether some rule or the size evaluator may take ``node`` (default domain only)."""
    return node.domain in ("", "ai.onnx") and (node.op_type in BUILTIN_RULES
                                               or node.op_type in rules
                                               or node.op_type in SYMBOLIC_OPS)


def candidates(node: OnnxNode, rules: Rules) -> list[tuple[str, Callable]]:
    """The rules to try for ``node``, in order: a built-in rule alone, else the op records'."""
    if node.op_type in BUILTIN_RULES:
        return [("builtin", BUILTIN_RULES[node.op_type])]
    return rules.get(node.op_type, [])


def apply_rules(ctx: ImportContext, node: OnnxNode, cands, where):
    """The first candidate's results that converts ``node``, else ``(None, refusal)``: a rule
    that declines (`OnnxDeclined`) passes the node on, and its message counts only when no other
    rule said more. Anything else a rule raises means a malformed node."""
    err = None
    for opname, rule in cands:
        try:
            return rule(ctx, node), None
        except OnnxUnsupportedError as exc:
            if err is None or not isinstance(exc, OnnxDeclined):
                err = exc
        except FormatError:
            raise
        except Exception as exc:  # noqa: BLE001 - a malformed node trips up a rule
            raise OnnxImportError(where(
                f"{node.describe()}: malformed node (the {opname} import rule failed: "
                f"{type(exc).__name__}: {exc})")) from exc
    return None, err
