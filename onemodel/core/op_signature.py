"""Real signatures and docstrings for op functions and Tensor methods, made from the op record,
so ``help()``, ``inspect.signature``, IDEs and tab completion see names, defaults and the doc."""
from __future__ import annotations

import inspect

from ..registry.records import REQUIRED, OpDef
from .dispatch import torch_name

_P = inspect.Parameter


def call_order(op: OpDef) -> list[str]:
    """The positional order of a call: ``op.signature`` when given, else inputs then params."""
    if op.signature:
        return list(op.signature)
    return [i.rstrip("?*") for i in op.inputs] + list(op.params)


def _defaults(op: OpDef) -> dict[str, object]:
    out: dict[str, object] = {}
    for raw in op.inputs:
        if raw.endswith("?"):
            out[raw.rstrip("?")] = None
    for pname, p in op.params.items():
        if not p.required:
            out[pname] = p.default
    return out


def signature(op: OpDef, bound_first: bool = False) -> inspect.Signature:
    """``op``'s call signature; with ``bound_first``, as a Tensor method (``self`` in place of
    the first input). A required name after one with a default (which Python's signatures cannot
    show positionally) and everything after it become keyword-only."""
    names = call_order(op)
    defaults = _defaults(op)
    params = []
    if bound_first:
        names = names[1:]
        params.append(_P("self", _P.POSITIONAL_OR_KEYWORD))
    kind = _P.POSITIONAL_OR_KEYWORD
    seen_default = False
    star = op.inputs[0].rstrip("*") if op.variadic and op.signature else None
    for name in names:
        if name == star:  # last in the signature: the remaining positional arguments
            params.append(_P(name, _P.VAR_POSITIONAL))
            continue
        default = defaults.get(name, REQUIRED)
        if default is REQUIRED and seen_default:
            kind = _P.KEYWORD_ONLY
        seen_default = seen_default or default is not REQUIRED
        params.append(_P(name, kind) if default is REQUIRED else _P(name, kind, default=default))
    return inspect.Signature(params)


def docstring(op: OpDef, method: str | None = None) -> str:
    """The record's doc line, then its inputs and params (kind, default, choices, doc)."""
    lines = [op.doc.strip() or f"The op {op.name!r}."]
    if method is not None:
        lines.append(f"\nThe method form of om.ops.{op.name}: this tensor is its input "
                     f"{op.inputs[0].rstrip('?*')!r}.")
    ins = []
    for raw in op.inputs:
        name = raw.rstrip("?*")
        what = "a list or tuple of tensors" if raw.endswith("*") else "tensor"
        ins.append(f"  {name}: {what}{' or None' if raw.endswith('?') else ''}")
    lines += ["", "Inputs:", *ins]
    if op.params:
        lines += ["", "Parameters:"]
        for pname, p in op.params.items():
            bits = [p.kind]
            if not p.required:
                bits.append(f"default {p.default!r}")
            if p.choices:
                bits.append("one of " + ", ".join(map(repr, p.choices)))
            alias = torch_name(pname)
            if alias:
                bits.append(f"PyTorch's {alias!r} is accepted too")
            line = f"  {pname}: {'; '.join(bits)}"
            if p.doc:
                line += f". {p.doc}"
            lines.append(line)
    if op.provider:
        lines += ["", f"From {op.provider}."]
    return "\n".join(lines)
