"""What the lowerings ask of an op's record instead of its name: its traits (view kind,
permutation, epilogue), read with the node's params completed by the op's defaults."""
from __future__ import annotations

from typing import Any, Mapping

from onemodel.core.symbolic import evaluate_nested
from onemodel.registry.records import NO_TRAITS, OpTraits


def traits_of(lw, op_name: str) -> OpTraits:
    op = lw.ops.get(op_name)
    return getattr(op, "traits", None) or NO_TRAITS


def full_params(lw, op_name: str, params: Mapping[str, Any]) -> dict:
    """``params`` with the op's defaults for those a node leaves out (a GraphBuilder's or an
    import's node means them, as its kernel does)."""
    op = lw.ops.get(op_name)
    full = {k: p.default for k, p in getattr(op, "params", {}).items()
            if not getattr(p, "required", True)}
    full.update(params)
    return full


def epilogue_of(lw, node) -> tuple | None:
    """``(kind, p0, p1)`` (`onemodel.registry.records.EPILOGUE_KINDS`) when ``node`` is a
    one-input, one-output activation whose record declares an epilogue for its params."""
    tr = traits_of(lw, node.op)
    if tr.epilogue is None or len(node.inputs) != 1 or len(node.outputs) != 1:
        return None
    params = evaluate_nested(dict(node.params), lw.env)
    return tr.epilogue_of(full_params(lw, node.op, params))


def permutation_of(lw, node, rank: int) -> tuple | None:
    """The axes a ``view="permute"`` node reorders its input by (numpy's transpose order), or
    None."""
    tr = traits_of(lw, node.op)
    if tr.view != "permute" or tr.permutation is None:
        return None
    params = full_params(lw, node.op, evaluate_nested(dict(node.params), lw.env))
    try:
        axes = tuple(int(a) for a in tr.permutation(params, rank))
    except Exception:  # noqa: BLE001 - a record's function refusing these params: no view
        return None
    return axes if sorted(axes) == list(range(rank)) else None


__all__ = ["traits_of", "full_params", "epilogue_of", "permutation_of"]
