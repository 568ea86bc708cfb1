"""The pass pipeline: graph passes are `PassDef` records (built in or from plugins) run by level.

* ``"none"`` runs nothing; ``"basic"`` runs the passes of level ``basic`` (constant folding,
  dead-code elimination, common-subexpression elimination, no-op elimination); ``"all"`` adds the
  passes of level ``all`` (fusions).
* Passes run in ``order`` (then name), repeatedly, until a round changes nothing (a fixed point,
  at most ``max_rounds`` rounds). ``disabled=`` names passes to skip.
* Every pass returns a new graph; `optimize(..., verify=True)` checks each result with
  `Graph.verify` and names the pass that broke it.

The built-in passes live one per file in this package and are registered through the plugin
object `onemodel.passes.builtin`, exactly as a third-party plugin would register its own; this
package adds it to the registry when imported (``import onemodel`` imports it).
"""
from __future__ import annotations

from typing import Iterable, Sequence

from ..core.graph import Graph
from ..errors import ArgumentError, GraphError, OneModelError
from ..registry.records import PassDef
from . import dead_code

LEVELS = ("none", "basic", "all")
_INCLUDED = {"none": (), "basic": ("basic",), "all": ("basic", "all")}


class PassError(OneModelError):
    """A pass failed or produced a malformed graph (the message names the pass)."""


def passes_for(level: str, disabled: Iterable[str] = ()) -> list[PassDef]:
    """The registered passes that run at ``level``, in running order."""
    from ..registry import REGISTRY

    if level not in _INCLUDED:
        raise OneModelError(f"unknown optimization level {level!r}; the levels are "
                            f"{', '.join(map(repr, LEVELS))}")
    table = REGISTRY.tables().passes
    if isinstance(disabled, str):
        disabled = (disabled,)  # one pass name, not its letters
    try:
        names = list(disabled)
    except TypeError:
        names = None
    if names is None or not all(isinstance(d, str) for d in names):
        raise ArgumentError(f"disabled must list pass names (strings), got {disabled!r:.80}")
    disabled = set(names)
    unknown = disabled - set(table)
    if unknown:
        raise OneModelError(f"cannot disable unknown pass(es) {sorted(unknown)}; installed passes: "
                            f"{', '.join(sorted(table))}")
    chosen = [p for p in table.values() if p.level in _INCLUDED[level] and p.name not in disabled]
    return sorted(chosen, key=lambda p: (p.order, p.name))


def _signature(g: Graph):
    return (g.nodes, g.outputs, tuple(sorted(g.initializers)))


def run_pass(p: PassDef, graph: Graph, verify: bool = False) -> Graph:
    """Run one pass, naming it in any error."""
    try:
        out = p.run(graph)
    except OneModelError as exc:
        raise PassError(f"pass {p.name!r} ({p.provider}) failed: {exc} (skip it with "
                        f"disabled=[{p.name!r}])") from exc
    except Exception as exc:  # noqa: BLE001 - a plugin's pass may raise anything
        raise PassError(f"pass {p.name!r} ({p.provider}) failed: {type(exc).__name__}: "
                        f"{exc} (skip it with disabled=[{p.name!r}])") from exc
    if not isinstance(out, Graph):
        raise PassError(f"pass {p.name!r} ({p.provider}) returned {type(out).__name__}, not a "
                        f"Graph")
    if verify:
        try:
            out.verify()
        except GraphError as exc:
            raise PassError(f"pass {p.name!r} ({p.provider}) produced a malformed graph: "
                            f"{exc}") from exc
    return out


def optimize(graph: Graph, level: str = "all", disabled: Sequence[str] = (), *,
             verify: bool = False, max_rounds: int = 10) -> Graph:
    """The graph after the passes of ``level``, repeated to a fixed point."""
    pipeline = passes_for(level, disabled)
    for _ in range(max_rounds):
        before = _signature(graph)
        for p in pipeline:
            graph = run_pass(p, graph, verify)
        if _signature(graph) == before:
            break
    return graph


def optimize_on_load(graph: Graph, max_rounds: int = 10) -> Graph:
    """The graph after the passes marked ``on_load`` (the recognisers of decomposed patterns),
    then dead-code elimination, repeated to a fixed point; ONNX import runs it."""
    from ..registry import REGISTRY

    table = REGISTRY.tables().passes
    pipeline = sorted((p for p in table.values() if p.on_load), key=lambda p: (p.order, p.name))
    if not pipeline:
        return graph
    pipeline.append(dead_code.PASS)
    for _ in range(max_rounds):
        before = _signature(graph)
        for p in pipeline:
            graph = run_pass(p, graph, verify=True)
        if _signature(graph) == before:
            break
    return graph


def _register_builtin() -> None:
    """The generic passes join the registry as the plugin "onemodel-builtin-passes" when this
    layer is imported (the registry, below it, never imports it)."""
    from ..registry import REGISTRY
    from . import builtin

    REGISTRY.add_internal(builtin.PLUGIN_NAME, builtin)


_register_builtin()

__all__ = ["LEVELS", "PassError", "passes_for", "run_pass", "optimize", "optimize_on_load"]
