"""Rules: how an ONNX node finds its import rules (op records' ``OnnxSpec.imports``, the built-in
ones) and how they are applied: in turn, until one converts the node or all refuse it.

A rule is keyed by its op type for the default domain (``"Relu"``) and by ``"<domain>.<op type>"``
for any other (``"ai.onnx.preview.FlexAttention"``; op types hold no dot, so the last one splits
the key): the key a node's domain and op type give (`op_key`) is the one its rules are found by,
and the one refusals name."""
from __future__ import annotations

from typing import Callable

from ...errors import FormatError
from .builtin_rules import BUILTIN_RULES
from .context import ImportContext
from .errors import OnnxDeclined, OnnxImportError, OnnxUnsupportedError
from .node import OnnxNode
from .sizes import SYMBOLIC_OPS

Rules = dict[str, list[tuple[str, Callable]]]


DEFAULT_DOMAINS = ("", "ai.onnx")


def op_key(domain: str, op_type: str) -> str:
    """The key naming an op type of a domain: the op type alone for the default domain."""
    return op_type if domain in DEFAULT_DOMAINS else f"{domain}.{op_type}"


def _normal_key(key: str) -> str:
    """A rule's key as `op_key` writes it (``"ai.onnx.Relu"`` is ``"Relu"``)."""
    domain, _, op_type = key.rpartition(".")
    return op_key(domain, op_type)


def claimed_rules() -> Rules:
    """ONNX op key (`op_key`) -> [(op name, rule)] from every installed op record."""
    from ...registry import REGISTRY

    table: Rules = {}
    for name, op in sorted(REGISTRY.tables().ops.items()):
        if op.onnx is None:
            continue
        for op_type, rule in op.onnx.imports.items():
            table.setdefault(_normal_key(op_type), []).append((name, rule))
    return table


def claimed_op_types() -> set[str]:
    """Every ONNX op key (`op_key`) the import handles (built-in rules and op records)."""
    return set(BUILTIN_RULES) | set(claimed_rules())


def handled(node: OnnxNode, rules: Rules) -> bool:
    """Whether some rule or the size evaluator (default domain only) may take ``node``."""
    if op_key(node.domain, node.op_type) in rules:
        return True
    return node.domain in DEFAULT_DOMAINS and (node.op_type in BUILTIN_RULES
                                               or node.op_type in SYMBOLIC_OPS)


def candidates(node: OnnxNode, rules: Rules) -> list[tuple[str, Callable]]:
    """The rules to try for ``node``, in order: a built-in rule alone, else the op records'."""
    if node.domain in DEFAULT_DOMAINS and node.op_type in BUILTIN_RULES:
        return [("builtin", BUILTIN_RULES[node.op_type])]
    return rules.get(op_key(node.domain, node.op_type), [])


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
