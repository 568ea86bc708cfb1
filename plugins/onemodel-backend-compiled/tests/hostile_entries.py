"""Run in a subprocess by test_plan_hostile.py: store a model's plan in the on-disk cache, then
rewrite the entry once per hostile value (CRCs recomputed) and load and run it in a forked
child, so that a crash or a hang is a finding, not the end of the test run.

``python hostile_entries.py MODEL OUT.json``; the cache folder comes from $ONEMODEL_CACHE_DIR.
Each outcome is one of: "refused" (the entry was rejected, rebuilt, and the result is right),
"harmless" (the entry was used and the result is right), "error" (a OneModelError), "wrong"
(a wrong number, or any other exception), "signal N" (the child died), "hang".
"""
from __future__ import annotations

import copy
import json
import os
import signal
import sys

import attrs
import numpy as np

import onemodel as om
from onemodel import Tensor
from onemodel.errors import OneModelError
from onemodel_backend_compiled import entry_file, heuristics, plan_cache
from onemodel_backend_compiled import program as P
from onemodel_backend_compiled.lowered import split_program

F = "f"  # a float's bits: not an address or a size (skipped)
A, N, S, C, R = "addr", "count", "stride", "code", "reg"
A8 = "addr of int64"  # an address of 8-byte elements: half an element off is refused too
O = "vm opcode"  # a VM instruction's opcode: the gaps between the opcode ranges too
#: the kind of each field of each instruction, from the field lists in csrc/ (written out
#: here, not taken from plan_check, so the two are independent)
KINDS = {
    P.I_GEMM: [A, S, N, N, N, A, A, C, A, S, A, S, C],
    P.I_BMM: [N, A, S, S, A, S, S, S, A, S, N, N, N, C, A],
    P.I_SOFTMAX: [A, A, N, N],
    P.I_LAYERNORM: [A, A, N, N, A, A, F],
    P.I_ATTN: [N] * 6 + [F] + [A, S, S, S] * 4 + [A],
    P.I_ATTN_MASK: [N] * 6 + [F] + [A, S, S, S] * 4 + [A, A, S, S, S, S, C],
    P.I_MAXPOOL: [A, N, N, N, N, N, N, N, S, S, N, N, A],
    P.I_AVGPOOL: [A, N, N, N, N, N, N, N, S, S, N, N, A],
    P.I_COPY: [A, A] + [N] * 6 + [S] * 6,
    P.I_CONV_DIRECT: [A, N, N, N, N, N, N, N, S, S, N, N, N, N, N, A, A, C, A, A, C, N, N,
                      F, F, A, A, A, N],
    P.I_CONV_LANES: [A, N, N, N, N, N, N, N, S, S, N, N, N, N, N, A, A, C, A, A, C, N, N,
                     F, F, A, A, A, N],
    P.I_CONV1X1: [A, N, N, N, N, A, A, C, A, A, F, F, A, A, A, C],
    P.I_CONV_GEMM: [A, N, N, N, N, N, N, N, S, S, N, N, N, N, N, N, A, A, C, A, A, F, F,
                    A, A, A, C],
    P.I_MEAN_ROWS: [A, N, N, A],
    P.I_GATHER: [A, N, N, N, A8, N, A, C],
    P.I_LSTM: [N, N, N, A, A, A, A, A, A, A, S, S, A, A, C, A, N, S, S],
    P.I_GRU: [N, N, N, A, A, A, A, A, A, A, S, S, A, A, C, A, N, S, S],
}


def kinds(ins: list) -> list:
    """The kind of each field of one instruction (variable-length ones worked out)."""
    op, f = ins[0], ins[2:]
    if op == P.I_VM:
        nin = f[0]
        k = [N] + [N] * 4 + [A] + [S] * 4 + [A, S, S, S, S] * nin
        ncode = f[len(k)]
        k += [N] + [O, R, R, R] * ncode
        return k + [N] + [F] * f[len(k)]
    if op == P.I_CONCAT:
        return [A, N, N, N] + [A, N, S] * f[3]
    return KINDS[op]


def hostile(kind: str, value: int, sizes: list) -> list:
    """Out of range, negative, huge, 2^62, one past the end (sizes in bytes), a byte off its
    element (half an element for int64)."""
    if kind in (A, A8):
        buf = value >> P.BUF_SHIFT if value >= 0 else 1
        out = [-2, 1 << 62, (buf << P.BUF_SHIFT) | sizes[buf], P.addr(len(sizes), 0)]
        if value >= 0:
            out += [value + 1] + ([value + 4] if kind == A8 else [])
        return out
    if kind == N:
        return [-1, 0, 1 << 31, 1 << 62]
    if kind == S:
        return [-1, 1 << 31, 1 << 62]
    if kind == C:
        return [-1, 1 << 62]
    if kind == O:  # 25-29, 37-39: between the ranges; 59: one past om_vmath.h's
        return [-1, 0, 25, 37, 39, 59, 1 << 62]
    if kind == R:
        return [-1, 16]  # 16: one past the VM's registers
    return []


# -- the models: together every instruction kind the lowering emits ---------------------------
def _w(rng, *shape, scale=0.3):
    return Tensor.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))


def mlp():
    rng = np.random.default_rng(0)
    w1, b1, w2 = _w(rng, 16, 12), _w(rng, 16), _w(rng, 8, 16)

    def fn(x):
        h = om.ops.relu(om.ops.linear(x, w1, b1))
        return om.ops.tanh(om.ops.linear(h, w2)) * 0.5 + x[:, :8]

    x = np.random.default_rng(1).standard_normal((3, 12)).astype(np.float32)
    return fn, x


def cnn():
    rng = np.random.default_rng(0)
    c1, b1 = _w(rng, 8, 3, 3, 3), _w(rng, 8)
    dw = _w(rng, 8, 1, 3, 3)
    c3, c4 = _w(rng, 16, 8, 3, 3), _w(rng, 16, 16, 1, 1)
    c5 = _w(rng, 8, 8, 1, 1)
    c6 = _w(rng, 16, 8, 3, 3)
    fc = _w(rng, 5, 40)

    def fn(x):
        h = om.ops.relu(om.ops.conv2d(x, c1, b1, padding=1))              # direct, 12x12
        h = om.ops.max_pool2d(h, 3, stride=2, padding=1)                   # 6x6
        d = om.ops.conv2d(h, dw, padding=1, groups=8)                      # depthwise
        g = om.ops.relu(om.ops.conv2d(d, c3, padding=1))                   # implicit GEMM
        g = om.ops.conv2d(g, c4)                                           # 1x1 as a GEMM
        g = om.ops.avg_pool2d(g, 2)                                        # 3x3
        e = om.ops.avg_pool2d(om.ops.conv2d(h, c5), 2)                     # 1x1 direct
        p = om.ops.max_pool2d(om.ops.relu(om.ops.conv2d(h, c6, padding=1)), 2)  # lanes
        m = om.ops.mean(om.ops.concat([g, e, p], axis=1), axis=(2, 3))     # concat, mean
        return om.ops.linear(m, fc)

    x = np.random.default_rng(1).standard_normal((2, 3, 12, 12)).astype(np.float32)
    return fn, x


def transformer():
    rng = np.random.default_rng(0)
    d, heads, seq = 16, 2, 6
    table = _w(rng, 11, d, scale=1.0)
    pos = _w(rng, seq, d, scale=0.1)
    wqkv, wo = _w(rng, 3 * d, d), _w(rng, d, d)
    g, b = _w(rng, d, scale=1.0), _w(rng, d)
    mask = Tensor.from_numpy(np.triu(np.full((seq, seq), -1e9, np.float32), 1))

    def fn(ids):
        x = om.ops.embedding(ids, table) + pos                             # gather, VM
        x = om.ops.layer_norm(x, (d,), g, b)
        qkv = om.ops.reshape(om.ops.linear(x, wqkv), (-1, seq, 3, heads, d // heads))
        q, k, v = (om.ops.transpose(qkv[:, :, i], 1, 2) for i in range(3))
        a = om.ops.scaled_dot_product_attention(q, k, v)                   # attention
        m = om.ops.scaled_dot_product_attention(q, k, v, mask)             # with a mask
        s = om.ops.softmax(om.ops.transpose(om.ops.matmul(q, om.ops.transpose(k, 2, 3)),
                                            2, 3))                         # bmm, copy, softmax
        c = om.ops.matmul(s, v) + a + m
        c = om.ops.reshape(om.ops.transpose(c, 1, 2), (-1, seq, d))
        return om.ops.linear(c, wo) + x

    ids = np.random.default_rng(1).integers(0, 11, (2, seq)).astype(np.int64)
    return fn, ids


def rnn():
    """An LSTM with initial states, then a reversed GRU without linear_before_reset (ONNX's
    default: two panel sets) over its output; hidden size 10: 8 lanes and a tail."""
    rng = np.random.default_rng(0)
    size, h = 5, 10
    lw = [_w(rng, 4 * h, size), _w(rng, 4 * h, h), _w(rng, 4 * h), _w(rng, 4 * h)]
    gw = [_w(rng, 3 * h, h), _w(rng, 3 * h, h), _w(rng, 3 * h), _w(rng, 3 * h)]
    h0, c0 = _w(rng, 2, h), _w(rng, 2, h)

    def fn(x):  # x: (seq, 2, size); the sweep's "batch" is the sequence
        y, hn, cn = om.ops.lstm(x, *lw, h0, c0)
        y2, h2 = om.ops.gru(y, *gw, hn, reverse=True, linear_before_reset=False)
        return y2 + cn + h2

    x = np.random.default_rng(1).standard_normal((4, 2, size)).astype(np.float32)
    return fn, x


def rnn_fused():
    """An LSTM, a GRU with linear_before_reset and one without (ONNX's default) whose batch
    of 16 fills the lanes (rnn_rules.fused_rnn: flag 4, x itself, the weights and biases by
    unit, the input size), with initial states; hidden size 12: one 8-lane block and a tail;
    the last layer's output read batch first (its rows written at y_row = seq * H)."""
    rng = np.random.default_rng(2)
    size, h, batch = 5, 12, 16
    lw = [_w(rng, 4 * h, size), _w(rng, 4 * h, h), _w(rng, 4 * h), _w(rng, 4 * h)]
    gw = [_w(rng, 3 * h, h), _w(rng, 3 * h, h), _w(rng, 3 * h), _w(rng, 3 * h)]
    h0, c0 = _w(rng, batch, h), _w(rng, batch, h)
    gw2 = [_w(rng, 3 * h, h), _w(rng, 3 * h, h), _w(rng, 3 * h), _w(rng, 3 * h)]

    def fn(x):  # x: (seq, 16, size); the sweep's "batch" is the sequence
        y, hn, cn = om.ops.lstm(x, *lw, h0, c0, reverse=True)
        y2, h2 = om.ops.gru(y, *gw, hn)
        y3, h3 = om.ops.gru(y2 + cn + h2, *gw2, h2, linear_before_reset=False)
        return om.ops.transpose(y3, 0, 1) + om.ops.unsqueeze(h3, 1)

    x = np.random.default_rng(3).standard_normal((4, batch, size)).astype(np.float32)
    return fn, x


MODELS = {"mlp": mlp, "cnn": cnn, "transformer": transformer, "rnn": rnn,
          "rnn_fused": rnn_fused}


def traced(name):
    fn, x = MODELS[name]()
    return om.trace(fn, Tensor.from_numpy(x), "batch", *([None] * (x.ndim - 1))), x


# -- the entry -------------------------------------------------------------------------------
def _fields(obj):
    """The {name: value} fields of an encoded record of this plugin ({"O": [class, fields]})."""
    return obj["O"][1]


def program(body):
    return _fields(body["plan"]["program"])


def segments(body):
    return program(body)["segments"]["T"]


def native_segments(body):
    return [s for s in segments(body) if s["O"][0] == "NativeSegment"]


class Entry:
    """One stored plan entry, rewritten at will (CRCs recomputed by entry_file.encode)."""

    def __init__(self, path, key):
        self.path, self.key = path, key
        self.body, self.arrays = entry_file.read(path, key)
        self.body = copy.deepcopy(self.body)
        self.arrays = [np.array(a) for a in self.arrays]

    def write(self, body, arrays, key=None):
        data = b"".join(bytes(c) for c in entry_file.encode(key or self.key, body, arrays))
        with open(self.path, "wb") as f:
            f.write(data)

    def _program(self, seg):
        """The program array of an encoded native segment, and its index among the arrays."""
        index = _fields(seg)["program"]["A"][0]
        return index, self.arrays[index]

    def first_of_each_kind(self):
        """(segment, instruction index, instruction) of the first instruction of each opcode."""
        seen = {}
        for s, seg in enumerate(native_segments(self.body)):
            for i, ins in enumerate(split_program(self._program(seg)[1])):
                seen.setdefault(ins[0], (s, i, ins))
        return seen

    def with_instruction(self, s, i, ins):
        """(body, arrays) with instruction i of native segment s replaced in the program array
        that runs."""
        index, prog = self._program(native_segments(self.body)[s])
        insl = split_program(prog)
        insl[i] = list(ins)
        arrays = list(self.arrays)
        arrays[index] = P.assemble(insl)
        return self.body, arrays

    def with_arena(self, peak):
        body = copy.deepcopy(self.body)
        program(body)["arena_bytes"] = peak
        return body, self.arrays


# -- the runs --------------------------------------------------------------------------------
def run_child(model, x, ref) -> str:
    """Load and run in a forked child; the outcome."""
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 9
        try:
            signal.alarm(20)
            # the rebuilt plan is not stored again (the parent rewrites the entry anyway)
            plan_cache.PlanCache.store = lambda *a, **k: None
            s = om.Session(model, backend="compiled", optimization="none")
            out = s.run({"input": x})["output"].numpy()
            stats = s._compiled.plan_cache.stats
            ok = out.shape == ref.shape and np.allclose(out, ref, rtol=1e-4, atol=1e-4)
            code = (0 if stats["rejected"] else 3) if ok else 1
        except OneModelError:
            code = 2
        except BaseException:  # noqa: BLE001 - anything else is a finding
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return "hang" if sig == signal.SIGALRM else f"signal {sig}"
    return {0: "refused", 1: "wrong", 2: "error", 3: "harmless"}.get(
        os.WEXITSTATUS(status), f"exit {os.WEXITSTATUS(status)}")


def main(name, out_path):
    model, x = traced(name)
    ref = om.Session(model, backend="numpy").run({"input": x})["output"].numpy()
    s = om.Session(model, backend="compiled", optimization="none")
    got = s.run({"input": x})["output"].numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    ng = s._compiled
    env = {"batch": x.shape[0]}
    key = ng.plan_cache.key(ng, env, tuple(model.graph.output_names))
    path = ng.plan_cache.path(key)
    plan = ng.plan(env, None)
    prog, types = plan.program, plan.types
    sizes = [4 * ng.weights.used, max(64, prog.arena_bytes)]  # in bytes
    sizes += [int(np.prod(types[f].shape)) * (8 if types[f].dtype.numpy == np.int64
                                              else 4) for f in prog.feeds]
    sizes += [4 * int(np.prod(types[w].shape)) if d else 0
              for d, w in zip(prog.direct, prog.wanted)]
    entry = Entry(path, key)
    results = []

    def record(what, body, arrays):
        entry.write(body, arrays)
        results.append([what, run_child(model, x, ref)])

    for op, (s_, i, ins) in sorted(entry.first_of_each_kind().items()):
        for j, kind in enumerate(kinds(ins)):
            for v in hostile(kind, ins[2 + j], sizes):
                bad = list(ins)
                bad[2 + j] = v
                record([P.NAMES[op], op, j, kind, v], *entry.with_instruction(s_, i, bad))
    for peak in (10 ** 12, 1e12, float("inf"), float("nan"), -1, 0, prog.arena_bytes // 2,
                 1 << 62):
        record(["arena", None, None, "peak", repr(peak)], *entry.with_arena(peak))
    # a plan stored for a big batch under this batch's key
    big = np.concatenate([x] * (512 // x.shape[0] + 1))[:512]
    s.run({"input": big})
    bkey = ng.plan_cache.key(ng, {"batch": 512}, tuple(model.graph.output_names))
    big_entry = Entry(ng.plan_cache.path(bkey), bkey)
    entry.write(big_entry.body, big_entry.arrays)
    results.append([["batch 512 under batch %d" % x.shape[0], None, None, "key", None],
                    run_child(model, x, ref)])
    entry.write(entry.body, entry.arrays)  # the good entry again: loaded as it was
    results.append([["unchanged", None, None, None, None], run_child(model, x, ref)])
    with open(out_path, "w") as f:
        json.dump({"kinds": sorted(entry.first_of_each_kind()), "results": results}, f)


def lanes_everywhere():
    """conv2d_lanes on every copy's heuristics (heuristics.py turns it on where it was
    measured to win), so that the CNN's sweep covers it on any machine."""
    for isa, rec in list(heuristics.MEASURED.items()):
        heuristics.MEASURED[isa] = attrs.evolve(rec, conv=attrs.evolve(
            rec.conv, lanes_min_cout=16, lanes_only_pooled=False))


if __name__ == "__main__":
    lanes_everywhere()
    main(sys.argv[1], sys.argv[2])
