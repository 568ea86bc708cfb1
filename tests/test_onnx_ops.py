"""Every op lowering, checked on the op's own samples: a one-node graph is exported, run in
onnxruntime and compared with the op's kernel; the file is imported back and must give the same
result through OneModel."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import onemodel as om  # noqa: E402
from onemodel import testing  # noqa: E402
from onemodel_ops_basic.data_dependent import DATA_DEPENDENT  # noqa: E402


def _cases():
    rng = np.random.default_rng(0)
    for name, op in sorted(om.registry.ops().items()):
        if (op.onnx is None or op.onnx.export is None) and op.decomposition is None:
            continue
        for i, s in enumerate(op.samples(rng)):
            yield pytest.param(op, s, id=f"{name}-{s.name or i}")


@pytest.mark.parametrize("op,sample", list(_cases()))
def test_lowering_matches_onnxruntime(op, sample):
    pytest.importorskip("onnxruntime")
    check = testing.check_onnx(op, sample)
    if check.skipped:  # training mode, or exported but not importable (an index with a
        pytest.skip(check.skipped)  # negative step has no ONNX rule)


def test_our_ops_have_onnx_mappings():
    """Every basic and nn op exports, except those the tracer refuses anyway."""
    from onemodel.formats.onnx_export import exportable

    no_export = {n for n, op in om.registry.ops().items()
                 if (op.provider or "").startswith(("onemodel-ops-basic", "onemodel-ops-nn"))
                 and not exportable(op)  # a decomposition exports as its parts
                 and op.untraceable is not DATA_DEPENDENT}
    assert no_export <= {"index_put", "mse_loss", "cross_entropy", "ctc_loss", "nll_loss",
                         "binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss",
                         "smooth_l1_loss", "huber_loss", "kl_div"}
