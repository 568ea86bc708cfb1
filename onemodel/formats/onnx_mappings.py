"""Attaching a plugin's ONNX mappings to its op records, checked.

A plugin keeps its mappings in a dict keyed by op name (``onnx_mapping.py``) and attaches them in
its ``onemodel_ops`` hook. A key naming no op of the plugin (a misspelling, an op renamed or
removed) used to be dropped without a word, and with it every import rule it carried; here it
is an `OnnxMappingError` naming the op and the plugin (the registry reports a hook that raises as
that plugin's load error, see ``om.registry.errors()``).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

import attrs

from ..registry.records import OnnxSpec, OpDef
from .onnx_errors import OnnxMappingError


def attach_onnx(ops: Iterable[OpDef], mappings: Mapping[str, OnnxSpec], *,
                plugin: str) -> tuple[OpDef, ...]:
    """``ops`` with ``mappings[op.name]`` as each one's ``onnx`` spec.

    Raises `OnnxMappingError` for a mapping whose name is no op in ``ops``, for one that is not
    an `OnnxSpec`, and for an op whose record already has a spec (one of the two would be lost).
    """
    ops = tuple(ops)
    by_name = {op.name: op for op in ops}
    unknown = sorted(set(mappings) - set(by_name))
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, by_name, n=1)
            hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
        raise OnnxMappingError(
            f"plugin {plugin!r}: ONNX mapping(s) for op(s) {', '.join(hints)}, which the plugin "
            f"does not define; its import rules and export lowering would be dropped",
            plugin=plugin)
    for name, spec in mappings.items():
        if not isinstance(spec, OnnxSpec):
            raise OnnxMappingError(f"plugin {plugin!r}: the ONNX mapping of op {name!r} must be "
                                   f"an OnnxSpec, got {type(spec).__name__}", plugin=plugin)
        if by_name[name].onnx is not None:
            raise OnnxMappingError(f"plugin {plugin!r}: op {name!r} has an OnnxSpec in its "
                                   f"record and another in its mappings; keep one",
                                   plugin=plugin)
    return tuple(attrs.evolve(op, onnx=mappings[op.name]) if op.name in mappings else op
                 for op in ops)


def add_import_rules(mappings: dict[str, OnnxSpec], op: str, rules: Mapping,
                     replace: bool = False) -> None:
    """Add ONNX import rules to ``mappings[op]`` (created when absent), for rules that compose
    several ops and ride on the record of the op at their heart; `attach_onnx` then checks that
    ``op`` exists. A rule for an ONNX op type the spec already claims is refused, unless
    ``replace`` says the new rule takes its place (one that wraps it, say, to add an output)."""
    spec = mappings.get(op) or OnnxSpec()
    clash = sorted(set(spec.imports or {}) & set(rules))
    if replace:
        missing = sorted(set(rules) - set(spec.imports or {}))
        if missing:
            raise OnnxMappingError(f"op {op!r}: replace=True, but there is no import rule for "
                                   f"{', '.join(missing)} to replace")
    elif clash:
        raise OnnxMappingError(f"op {op!r}: import rule(s) for {', '.join(clash)} given twice")
    mappings[op] = attrs.evolve(spec, imports={**(spec.imports or {}), **rules})


__all__ = ["attach_onnx", "add_import_rules"]
