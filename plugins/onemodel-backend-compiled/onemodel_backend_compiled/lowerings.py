"""Where the compiled backend finds each op's lowering: in the registry.

This plugin registers its own lowerings as ``KernelDef(backend="compiled", lower=...)`` records
(`kernel_defs`), as any plugin may (`lowering_api`); `table` builds one session's lookup from
the records first, then from what an op's traits select: a view kind's lowering, the pointwise
VM for a formula (under `rules.POINTWISE`, which no op is called).
"""
from __future__ import annotations

from typing import Any, Callable

from onemodel.registry import KernelDef

from .rnn_rules import RNN_RULES
from .rules import POINTWISE, RULES, VIEW_RULES, pointwise_rule
from .text_rules import TEXT_RULES

#: this plugin's lowerings of ops by name (each one of its instructions' users)
OWN = {**RULES, **TEXT_RULES, **RNN_RULES}


def kernel_defs() -> tuple[KernelDef, ...]:
    """This plugin's lowerings as registry records (its ``onemodel_kernels`` hook)."""
    return tuple(KernelDef(op=name, backend="compiled", lower=fn,
                           doc=f"native lowering ({fn.__module__.rsplit('.', 1)[-1]})")
                 for name, fn in OWN.items())


def records(tables) -> dict[str, KernelDef]:
    """The compiled backend's lowering records by op: every plugin's, this one's included."""
    return {op: k for (backend, op), k in tables.kernels.items()
            if backend == "compiled" and k.lower is not None}


def foreign(records_by_op) -> set[str]:
    """The ops whose lowering is not this plugin's own (its instructions are not trusted
    unchecked: backend.py checks such plans as it checks loaded ones)."""
    own = set(map(id, OWN.values()))
    return {op for op, k in records_by_op.items() if id(k.lower) not in own}


def table(tables) -> dict[str, Callable[..., Any]]:
    """op name -> lowering for one session: a record's ``lower`` first, else the lowering of
    the op's view kind; pointwise ops without either find `POINTWISE`."""
    rules: dict[str, Callable[..., Any]] = {POINTWISE: pointwise_rule}
    for name, op in tables.ops.items():
        rule = VIEW_RULES.get(op.traits.view)
        if rule is not None:
            rules[name] = rule
    rules.update({op: k.lower for op, k in records(tables).items()})
    return rules


__all__ = ["OWN", "kernel_defs", "records", "foreign", "table"]
