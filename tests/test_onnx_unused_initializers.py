"""An exported ONNX file holds no initializer that no node reads: ONNX Runtime warns about each
one on every session (``Removing initializer 'zero_bias'``), for LSTM / GRU files until the
exporter dropped them. Checked for the recurrent layers, for a lowering that leaves a constant
behind, and in ONNX Runtime's own log (a subprocess: it writes to the C++ stderr)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor
from onemodel.registry import OnnxSpec, OpDef, Sample, hookimpl

onnx = pytest.importorskip("onnx")

from onemodel.formats.onnx_export import save_onnx, to_onnx  # noqa: E402


def _unused(proto) -> list[str]:
    def read(graph):
        names = set()
        for n in graph.node:
            names.update(n.input)
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    names |= read(g)
        return names

    used = read(proto.graph) | {o.name for o in proto.graph.output}
    return sorted(t.name for t in proto.graph.initializer if t.name not in used)


def _rnn(cls, bias, bidirectional, layers=2):
    om.manual_seed(4)
    m = cls(3, 4, num_layers=layers, bidirectional=bidirectional, bias=bias).eval()
    return m.trace(Tensor.randn(DType.F32, 5, 2, 3, seed=1), "seq", "batch", None)


@pytest.mark.parametrize("cls", [om.nn.LSTM, om.nn.GRU], ids=["LSTM", "GRU"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
def test_rnn_files_have_no_unused_initializers(cls, bias, bidirectional):
    proto = to_onnx(_rnn(cls, bias, bidirectional))
    assert _unused(proto) == []
    assert cls.__name__ in {n.op_type for n in proto.graph.node}


def test_a_lowering_that_leaves_a_constant_behind_writes_no_initializer(registered):
    """The exporter drops what no node reads, whichever lowering made it."""
    def export(ctx, node):
        ctx.const(np.arange(7, dtype=np.float32), hint="left_behind")
        ctx.add_initializer(np.ones(3, np.float32), hint="also_left_behind")
        ctx.make_node("Neg", ctx.inputs(node), ctx.outputs(node))

    op = OpDef(name="negate_leaving_consts", inputs=("x",), kernel=lambda x: -x,
               infer=lambda x: x, vjp=None, samples=lambda rng: [Sample(args=(np.ones(2),))],
               onnx=OnnxSpec(export=export))

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return [op]

    registered(Plugin(), "leaves-consts-plugin")
    traced = om.trace(lambda x: om.ops.negate_leaving_consts(x) * 2.0,
                      Tensor.ones(DType.F32, 2, 3), "batch", None)
    proto = to_onnx(traced)
    names = [t.name for t in proto.graph.initializer]
    assert _unused(proto) == [] and not any("left_behind" in n for n in names), names
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(sess.run(None, {"input": x})[0], -2 * x)


def test_onnxruntime_logs_no_warning_for_rnn_files(tmp_path):
    pytest.importorskip("onnxruntime")
    paths = []
    for cls in (om.nn.LSTM, om.nn.GRU):
        for bidirectional in (False, True):
            path = tmp_path / f"{cls.__name__}_{bidirectional}.onnx"
            save_onnx(_rnn(cls, True, bidirectional), path)
            paths.append(str(path))
    code = ("import sys, numpy as np, onnxruntime as ort\n"
            "for p in sys.argv[1:]:\n"
            "    so = ort.SessionOptions()\n"
            "    so.log_severity_level = 1  # info and up: warnings certainly show\n"
            "    s = ort.InferenceSession(p, so, providers=['CPUExecutionProvider'])\n"
            "    s.run(None, {'input': np.ones((5, 2, 3), np.float32)})\n"
            "print('ran', len(sys.argv) - 1)\n")
    r = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ran 4"
    warnings = [line for line in r.stderr.splitlines() if "[W:" in line or "[E:" in line]
    assert warnings == [], "\n".join(warnings)
