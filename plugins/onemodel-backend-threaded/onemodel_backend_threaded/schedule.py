"""From a plan's steps to a task graph, and the decision whether running it in parallel pays.

1. Every step gets a cost (`costs.node_cost`, FLOP-equivalents).
2. *Regions* (intra-op): runs of consecutive steps that work row by row along the batch axis
   (`region.region_step`) become one unit run in ``k`` pieces, when the estimated saving
   (``cost * (1 - 1/k)``) beats one hand-off plus the per-step overhead each extra piece adds.
3. *Tasks* (inter-op): chains of units (a unit whose only producer has no other consumer) merge
   into one task, so a branch runs on one thread with no hand-off inside it. A task is
   *spawnable* when its cost reaches the hand-off threshold: only those are offered to other
   threads; cheaper ready tasks run on the thread that made them ready.
4. ``parallel`` is true when two spawnable tasks can run at the same time or a region exists;
   otherwise (``schedule="auto"``) the backend keeps the numpy backend's sequential plan.
"""
from __future__ import annotations

import attrs

from onemodel.core.plan import input_types
from onemodel.core.symbolic import evaluate_nested

from . import costs as cost_model
from .region import RegionStep, bounds, column_step, region_step


@attrs.define
class Region:
    index: int
    steps: list            # step indices (consecutive in the plan)
    length: int            # rows on axis 0
    spans: list            # (lo, hi) of each piece: rows, or output columns ("cols")
    info: dict             # step index -> RegionStep
    cost: float
    mode: str = "rows"     # "rows", or "cols": one linear step split by output features


@attrs.define
class Task:
    index: int
    units: list            # ("step", i) or ("region", r), run in this order by one thread
    steps: list            # every step index, in order
    preds: set = attrs.Factory(set)
    succs: list = attrs.Factory(list)
    cost: float = 0.0
    rank: float = 0.0      # cost of the longest path from here to the end
    spawn: bool = False    # worth offering to another thread


@attrs.define
class Schedule:
    tasks: list
    regions: list
    step_cost: list
    task_anc: list         # task index -> bitmask of the tasks that finish before it starts
    parallel: bool         # whether running it in parallel is expected to pay
    reason: str

    def summary(self) -> str:
        spawn = sum(t.spawn for t in self.tasks)
        rs = ", ".join(f"{len(r.steps)} step(s) x {len(r.spans)} {r.mode} pieces"
                       for r in self.regions)
        return (f"{len(self.tasks)} task(s), {spawn} worth a hand-off; "
                f"{len(self.regions)} batch region(s){' (' + rs + ')' if rs else ''}: "
                f"{self.reason}")


def _types_of(node, types, consts):
    return input_types(node, types, consts), [types[o] for o in node.outputs]


def _find_regions(steps, types, consts, env, kernels, costs, threads, handoff, step_flops,
                  excluded) -> list[Region]:
    regions: list[Region] = []
    cur: list[int] = []
    info: dict[int, RegionStep] = {}
    inside: set[str] = set()
    length = 0
    spans: list = []

    def close():
        if not cur:
            return
        k = len(spans)
        cost = sum(costs[i] for i in cur)
        repack = sum(info[i].repack for i in cur)
        gain = (cost * (1.0 - 1.0 / k) - handoff - (k - 1) * step_flops * len(cur)
                - (k - 1) * cost_model.PACK_FLOPS * repack)
        # the alternative: the large linear steps split by output features, one by one
        columns, col_gain = [], 0.0
        for i in cur:
            if not info[i].repack:
                continue
            st = steps[i]
            in_types, out_types = _types_of(st.node, types, consts)
            out = out_types[0].shape
            rows = cost_model.numel(out[:-1])
            if rows >= int(out[-1]):
                continue  # more rows than features: row pieces re-pack little
            made = column_step(st, kernels.get(st.node.op),
                               evaluate_nested(dict(st.node.params), env), in_types,
                               out_types, threads)
            if made is None:
                continue
            kc = len(made[1])
            g = (costs[i] * (1.0 - 1.0 / kc) - handoff
                 - cost_model.ELEM * cost_model.numel(out))  # the copy into the output
            if g > 0:
                columns.append((i, made))
                col_gain += g
        if columns and col_gain > gain:
            for i, (rstep, cspans) in columns:
                regions.append(Region(len(regions), [i], 0, cspans, {i: rstep}, costs[i],
                                      "cols"))
            return
        if gain > 0 and any(info[i].kind == "out" for i in cur):
            regions.append(Region(len(regions), list(cur), length, list(spans),
                                  {i: info[i] for i in cur}, cost))

    for i, st in enumerate(steps):
        node = st.node
        params = evaluate_nested(dict(node.params), env)
        in_types, out_types = _types_of(node, types, consts)
        lead = (int(out_types[0].shape[0]) if len(node.outputs) == 1 and out_types[0].shape
                else 0)
        r = None
        if i in excluded:
            lead = 0
        elif cur and lead == length:
            r = region_step(st, kernels.get(node.op), params, in_types, out_types, length,
                            spans, inside)
        if r is None:
            close()
            cur, info, inside = [], {}, set()
            if lead >= 2 and threads >= 2:
                length = lead
                spans = bounds(lead, min(threads, lead))
                r = region_step(st, kernels.get(node.op), params, in_types, out_types, length,
                                spans, inside)
        if r is not None:
            cur.append(i)
            info[i] = r
            inside.update(node.outputs)
    close()
    return regions


def _task_graph(units, unit_steps, upreds, costs, handoff):
    """Chains of units merged into tasks (units are in topological order, so tasks are too),
    with costs, ranks, and the bitmask of each task's ancestors."""
    n_succ = [0] * len(units)
    for ps in upreds:
        for p in ps:
            n_succ[p] += 1
    task_of = [-1] * len(units)
    tasks: list[Task] = []
    for u in range(len(units)):
        ps = upreds[u]
        if len(ps) == 1:
            (p,) = ps
            if n_succ[p] == 1:
                t = tasks[task_of[p]]
                t.units.append(units[u])
                t.steps.extend(unit_steps(u))
                task_of[u] = t.index
                continue
        t = Task(len(tasks), [units[u]], unit_steps(u))
        tasks.append(t)
        task_of[u] = t.index
    for u, ps in enumerate(upreds):
        for p in ps:
            if task_of[p] != task_of[u]:
                tasks[task_of[u]].preds.add(task_of[p])
    for t in tasks:
        for p in sorted(t.preds):
            tasks[p].succs.append(t.index)
        t.cost = sum(costs[s] for s in t.steps)
        t.spawn = t.cost >= handoff
    for t in reversed(tasks):
        t.rank = t.cost + max((tasks[s].rank for s in t.succs), default=0.0)
    for t in tasks:  # a thread offers the most urgent successor first
        t.succs.sort(key=lambda s: -tasks[s].rank)
    anc = [0] * len(tasks)
    for t in tasks:
        m = 0
        for p in t.preds:
            m |= anc[p] | (1 << p)
        anc[t.index] = m
    return tasks, anc


def _unit_preds(steps, unit_of, n_units, pure):
    producer: dict[str, int] = {}
    for i, st in enumerate(steps):
        for o in st.node.outputs:
            producer[o] = i
    upreds: list[set] = [set() for _ in range(n_units)]
    last_impure = None
    for i, st in enumerate(steps):
        u = unit_of[i]
        for a in st.node.inputs:
            if a is not None and a in producer and unit_of[producer[a]] != u:
                upreds[u].add(unit_of[producer[a]])
        if not pure(st.node):  # effects keep their order
            if last_impure is not None and last_impure != u:
                upreds[u].add(last_impure)
            last_impure = u
    return upreds


def _wide_steps(tasks, anc, threads) -> set[int]:
    """Steps of spawnable tasks that run alongside enough other spawnable tasks (2 x threads
    in all) to keep every thread busy: those parallelise best as they are (inter-op), with
    each kernel on its full batch, so they stay out of batch regions."""
    spawn = [t.index for t in tasks if t.spawn]
    wide: set[int] = set()
    for a in spawn:
        together = sum(1 for b in spawn if b != a and not (anc[a] >> b) & 1
                       and not (anc[b] >> a) & 1)
        if together + 1 >= 2 * threads:
            wide.update(tasks[a].steps)
    return wide


def analyse(plan, graph, env: dict, kernels: dict, *, threads: int, handoff: float,
            split: float, step_flops: float | None = None) -> Schedule:
    """The task graph of ``plan`` (see the module doc). ``handoff``: the least cost of a task
    worth another thread; ``split``: the cost of one hand-off that a region must save first."""
    from onemodel.registry import ops as all_ops

    if step_flops is None:  # Python overhead, like the hand-off: measured relative to it
        step_flops = split * cost_model.STEP_FLOPS / cost_model.SPLIT_FLOPS
    steps = plan.steps
    types = plan.types
    consts = graph.initializers
    n = len(steps)
    opdefs = all_ops()

    def pure(node):
        op = opdefs.get(node.op)
        return op is None or op.is_pure(node.params)

    costs = []
    for st in steps:
        node = st.node
        in_types, out_types = _types_of(node, types, consts)
        costs.append(cost_model.node_cost(node.op, in_types, out_types,
                                          evaluate_nested(dict(node.params), env)))
    # inter-op first: where independent branches alone keep the threads busy, keep them
    step_units = [("step", i) for i in range(n)]
    tasks, anc = _task_graph(step_units, lambda u: [u], _unit_preds(steps, list(range(n)), n,
                                                                     pure), costs, handoff)
    wide = _wide_steps(tasks, anc, threads) if threads >= 2 else set()
    regions = _find_regions(steps, types, consts, env, kernels, costs, threads, split,
                            step_flops, wide) if threads >= 2 else []
    if regions:
        unit_of = [-1] * n
        units: list[tuple] = []
        starts = {r.steps[0]: r for r in regions}
        for i in range(n):
            if unit_of[i] >= 0:
                continue
            reg = starts.get(i)
            if reg is not None:
                for s in reg.steps:
                    unit_of[s] = len(units)
                units.append(("region", reg.index))
            else:
                unit_of[i] = len(units)
                units.append(("step", i))

        def unit_steps(u):
            kind, j = units[u]
            return list(regions[j].steps) if kind == "region" else [j]

        tasks, anc = _task_graph(units, unit_steps,
                                 _unit_preds(steps, unit_of, len(units), pure), costs, handoff)

    spawnable = [t.index for t in tasks if t.spawn]
    concurrent = any(not (anc[b] >> a) & 1
                     for ai, a in enumerate(spawnable) for b in spawnable[ai + 1:])
    if threads < 2:
        parallel, reason = False, "one thread"
    elif concurrent:
        parallel, reason = True, "independent branches worth a hand-off"
    elif regions:
        parallel, reason = True, "batch work large enough to split"
    else:
        parallel, reason = False, ("no two independent branches worth a hand-off and no batch "
                                   "work large enough to split")
    return Schedule(tasks, regions, costs, anc, parallel, reason)


__all__ = ["Region", "Task", "Schedule", "analyse"]
