"""`ParallelPlan`: the core's plan (same steps, kernels, roots) run as a task graph on a pool.

Two things differ from the sequential `onemodel.core.plan.Plan`:

* **Liveness on the parallel schedule.** A buffer may be reused by a step only if *every* step
  that touches what it held (writes it, reads it or a view of it) is guaranteed to have finished
  before that step starts: it is in the same task earlier, or in a task the step's task waits
  for (transitively). "Last used earlier in node order" is not enough when two branches run at
  once, so the happens-before relation is computed from the task graph as bitmasks.
  Inside a batch region the pieces run at once on different rows: a row-sliced access is done
  for the next step of the same piece, but an input read whole by a region step stays in use
  until the whole region is over (its buffer is not reused inside the region).
* **Code layout.** One generated function per task (``t0(feeds, vals)``, ...) plus ``fin``
  building the outputs; values that cross tasks travel through the per-run list ``vals``
  (buffers are the runner's own, shared by its tasks). A region's pieces are functions
  ``r0_0(...)``, ``r0_1(...)`` called through ``_par`` (offered to the pool, worked through by
  the calling thread too); views made inside a region that are used after it are made again
  from the full buffers.

Execution (`execute`): dependency counting with one ready queue per run, no level barriers.
The calling thread works through the queue; when more tasks worth a hand-off are ready than
threads working on the run, idle pool workers are offered to help (`pool.Pool`). An exception
or a ``KeyboardInterrupt`` cancels the run's pending tasks and waits for the running ones.
"""
from __future__ import annotations

import collections
from typing import Mapping

import attrs

from onemodel.core.plan import OUT, CodeGen, Plan, is_literal, literal

from .execute import Par, Run, execute


@attrs.define
class _Runtime:
    """What the executor (`execute.Run`) needs of a plan, as plain tuples."""

    succs: tuple
    tokens: tuple          # per task: range(number of predecessor tasks)
    all_tasks: range
    spawn: tuple
    sources: tuple
    n_spawn_sources: int
    helper_slots: range    # one per pool worker a run may ask to help
    pool: object


class ParallelPlan(Plan):
    """A plan whose steps run as tasks on a pool (see the module doc)."""

    def __init__(self, graph, steps, types, feeds, consts, wanted, output_names, schedule,
                 pool, threads: int) -> None:
        self.schedule = schedule
        self.pool = pool
        self.threads = threads
        self._wanted = list(wanted)
        super().__init__(graph, steps, types, feeds, consts, wanted, output_names)
        tasks = schedule.tasks
        sources = [t.index for t in sorted(tasks, key=lambda t: -t.rank) if not t.preds]
        spawn = tuple(t.spawn for t in tasks)
        self._rt = _Runtime(
            succs=tuple(tuple(t.succs) for t in tasks),
            tokens=tuple(range(len(t.preds)) for t in tasks),
            all_tasks=range(len(tasks)),
            spawn=spawn, sources=tuple(sources),
            n_spawn_sources=sum(spawn[s] for s in sources),
            helper_slots=range(min(pool.workers, threads - 1)), pool=pool)

    # -- liveness on the parallel schedule -------------------------------------------------------
    def compute_slots(self, roots, pooled, defined, wanted) -> None:
        self.roots = roots
        sched = self.schedule
        n = len(self.steps)
        end = 1 << n  # "still needed when the run is over" (outputs)
        region_bit = {r.index: 1 << (n + 1 + r.index) for r in sched.regions}
        region_of = {s: r for r in sched.regions for s in r.steps}
        task_mask = [0] * len(sched.tasks)
        for t in sched.tasks:
            for s in t.steps:
                task_mask[t.index] |= 1 << s
            for kind, j in t.units:
                if kind == "region":
                    task_mask[t.index] |= region_bit[j]
        before = [0] * n  # steps (and regions) guaranteed to be over when step i starts
        for t in sched.tasks:
            base = 0
            anc = sched.task_anc[t.index]
            while anc:
                low = anc & -anc
                base |= task_mask[low.bit_length() - 1]
                anc ^= low
            prev = 0
            for kind, j in t.units:
                if kind == "step":
                    before[j] = base | prev
                    prev |= 1 << j
                else:
                    for s in sched.regions[j].steps:
                        before[s] = base | prev
                        prev |= 1 << s
                    prev |= region_bit[j]
        access: dict = collections.defaultdict(int)  # root -> steps that touch it
        for i, st in enumerate(self.steps):
            bit = 1 << i
            reg = region_of.get(i)
            sliced = reg.info[i].sliced if reg is not None else ()
            for pos, a in enumerate(st.args):
                if a is not None:
                    # read whole by every piece: in use until the region is over
                    b = (region_bit[reg.index] if reg is not None and not sliced[pos]
                         else bit)
                    for r in roots[a]:
                        access[r] |= b
            for o in st.node.outputs:
                for r in roots[o]:
                    access[r] |= bit
        for w in wanted:
            for r in roots[w]:
                access[r] |= end

        slot_of: dict = {}
        slot_touch: list[int] = []  # slot -> every step touching anything it has held
        self.slot_types = []
        for i, st in enumerate(self.steps):
            o = st.node.outputs[0] if st.node.outputs else None
            if not (st.kernel.kind == OUT and self.out_mode.get(o) == "slot"):
                continue
            t = self.types[o]
            key = (t.dtype, t.shape)
            done = before[i]
            slot = None
            if st.kernel.inplace:
                slot = self._inplace_parallel(st, i, key, pooled, slot_of, slot_touch, done)
            if slot is None:
                for s, stype in enumerate(self.slot_types):
                    if (stype.dtype, stype.shape) == key and not (slot_touch[s] & ~done):
                        slot = s
                        break
                else:
                    slot = len(self.slot_types)
                    self.slot_types.append(t)
                    slot_touch.append(0)
            r = ("slot", o)
            slot_of[r] = slot
            slot_touch[slot] |= access[r] | (1 << i)
        self.slot_of = slot_of

    def _inplace_parallel(self, st, i, key, pooled, slot_of, slot_touch, done):
        """A dying input's slot the elementwise step may overwrite: everything else touching
        that slot finishes before this step starts."""
        args = [a for a in st.args if a is not None]
        me = 1 << i
        for a in args:
            r = ("slot", a)
            if r not in pooled or r not in slot_of or self.roots[a] != frozenset({r}):
                continue
            t = self.types[a]
            if (t.dtype, t.shape) != key:
                continue
            if any(b != a and r in self.roots[b] for b in args):
                continue
            s = slot_of[r]
            if slot_touch[s] & ~me & ~done:
                continue
            return s
        return None

    # -- code generation: one function per task ------------------------------------------------
    def generate(self, feeds, consts, wanted) -> None:
        gen = CodeGen()
        gen.closure["_par"] = Par(self.pool)
        feed_set = set(feeds)
        for f in feeds:
            gen.names[f] = gen.var("i")
        for c in consts:
            gen.names[c] = gen.const(consts[c], "c")
        slot_vars = [f"s{i}" for i in range(len(self.slot_types))]
        slot_set = set(slot_vars)
        sched = self.schedule
        made_in: dict[str, int] = {}
        bodies = []
        pieces_src: dict[str, list] = {}
        for t in sched.tasks:
            lines = []
            for kind, j in t.units:
                if kind == "step":
                    lines.extend(self.emit_step(self.steps[j], gen, slot_vars))
                else:
                    lines.extend(self._emit_region(sched.regions[j], gen, slot_vars, slot_set,
                                                   set(consts), pieces_src))
            for s in t.steps:
                for o in self.steps[s].node.outputs:
                    made_in[o] = t.index
            bodies.append(lines)

        val_index: dict[str, int] = {}
        loads = [dict() for _ in sched.tasks] + [dict()]  # the last one is fin's
        stores = [dict() for _ in sched.tasks]

        def need(value: str, where: int) -> None:
            if value in consts:
                return
            v = gen.names.get(value)
            if v is None or v in slot_set:
                return  # a slot, or a view used only inside its region
            if value in feed_set:
                loads[where][v] = f"{v} = feeds[{value!r}]"
                return
            src = made_in[value]
            if src == where:
                return
            j = val_index.setdefault(value, len(val_index))
            loads[where][v] = f"{v} = vals[{j}]"
            stores[src][v] = f"vals[{j}] = {v}"

        for t in sched.tasks:
            for s in t.steps:
                for a in self.steps[s].args:
                    if a is not None:
                        need(a, t.index)
        fin = len(sched.tasks)
        for w in wanted:
            need(w, fin)
        self.n_vals = len(val_index)

        functions = dict(pieces_src)
        for t in sched.tasks:
            lines = [(text, None) for text in loads[t.index].values()]
            lines += bodies[t.index]
            lines += [(text, None) for text in stores[t.index].values()]
            functions[f"t{t.index}(feeds, vals)"] = lines
        fin_lines = [(text, None) for text in loads[fin].values()]
        fin_lines.append((self.emit_return(gen.names, wanted), None))
        functions["fin(feeds, vals)"] = fin_lines
        names = "".join(f"t{t.index}, " for t in sched.tasks)
        self.compile_functions(gen.closure, slot_vars, functions, f"({names}), fin")

    def _emit_region(self, reg, gen, slot_vars, slot_set, const_set, pieces_src) -> list:
        """The task's lines for a batch region; its piece functions go into ``pieces_src``."""
        names, const = gen.names, gen.const
        lines: list = []
        # full-size targets: slots, or fresh arrays allocated before the pieces run
        for s in reg.steps:
            st = self.steps[s]
            o = st.node.outputs[0]
            if reg.info[s].kind != OUT:
                continue
            if self.out_mode[o] == "slot":
                names[o] = slot_vars[self.slot_of[("slot", o)]]
            else:
                t = self.types[o]
                v = gen.var("v")
                lines.append((f"{v} = _np_empty({const(t.shape, 'shape')}, "
                              f"{const(t.dtype.numpy, 'dt')})", st.node))
                names[o] = v
        inside_views: set[str] = set()
        params: dict[str, None] = {}
        bodies = []
        for lo, hi in reg.spans:
            local: dict[str, str] = {}
            body = []
            for s in reg.steps:
                st = self.steps[s]
                info = reg.info[s]
                fn, extra = info.pieces[(lo, hi)]
                args = []
                for a, sl in zip(st.args, info.sliced):
                    if a is None:
                        args.append("None")
                        continue
                    if a in local:
                        args.append(local[a])
                        continue
                    full = names[a]
                    if full not in slot_set and a not in const_set:
                        params[full] = None
                    args.append(f"{full}[{lo}:{hi}]" if sl else full)
                k = const(fn)
                extra_args = [literal(e) if is_literal(e) else const(e, "e") for e in extra]
                call = ", ".join(args + extra_args)
                o = st.node.outputs[0]
                if info.kind == OUT:
                    target = names[o]
                    if target not in slot_set:
                        params[target] = None
                    if info.out_sliced:
                        target = f"{target}[{lo}:{hi}]"
                    body.append((f"{k}({call}{', ' if call else ''}out={target})", st.node))
                else:
                    v = gen.var("w")
                    body.append((f"{v} = {k}({call})", st.node))
                    local[o] = v
                    inside_views.add(o)
            bodies.append(body)
        sig = ", ".join(params)  # every piece takes the same parameters
        piece_names = [f"r{reg.index}_{p}" for p in range(len(bodies))]
        for name, body in zip(piece_names, bodies):
            pieces_src[f"{name}({sig})"] = body
        lines.append((f"_par(({', '.join(piece_names)},), ({sig}{',' if params else ''}))",
                      self.steps[reg.steps[0]].node))
        # views made inside the region and used after it: made again from the full buffers
        used_after = set()
        region_steps = set(reg.steps)
        for i, st in enumerate(self.steps):
            if i not in region_steps:
                used_after.update(a for a in st.args if a is not None)
        used_after.update(self._wanted)
        again = []
        for s in reversed(reg.steps):
            st = self.steps[s]
            o = st.node.outputs[0]
            if o in inside_views and (o in used_after):
                again.append(s)
                used_after.update(a for a in st.args if a is not None)
        for s in reversed(again):
            lines.extend(self.emit_step(self.steps[s], gen, slot_vars))
        return lines

    # -- running ---------------------------------------------------------------------------------
    def run(self, feeds: Mapping) -> dict:
        """Run on the pool (BLAS is bounded by the caller, `backend.ThreadedGraph`)."""
        r = self.take_runner()
        fns, fin = r
        rt = self._rt
        rt.pool.start()
        run = Run(rt, fns, feeds, [None] * self.n_vals)
        try:
            execute(run)
            outs = fin(feeds, run.vals)
        except Exception as exc:
            err = self.error_for(exc)
            if err is None:
                raise
            raise err from exc
        finally:
            # Back to the plan only when no helper is inside the run any more (`execute` waits
            # for them unless a second interrupt cut that wait short): a cancelled run's
            # buffers are never handed to the next run while a worker may still write them.
            run.cancelled = True
            if not run.active:
                self.return_runner(r)
        return dict(zip(self.output_names, outs))

    def describe(self) -> str:
        return f"# parallel plan: {self.schedule.summary()}\n{self.source}"


__all__ = ["ParallelPlan"]
