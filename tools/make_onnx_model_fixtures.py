"""Write tests/fixtures/torch_onnx/<name>.onnx and <name>.npz: torch.nn built-ins (LSTM, GRU,
TransformerDecoderLayer, a Conv1d audio net) and transformers' BERT and GPT-2 (small random
configs; tests/torch_onnx_models.FIXTURE_BUILDERS) exported by torch.onnx.export's legacy
exporter with dynamic batch and sequence axes, and PyTorch's outputs at every size in the
builder's ``sizes``, so tests/test_onnx_models.py checks the import without torch.

    .venv/bin/pip install torch==2.13.0 transformers
    .venv/bin/python tools/make_onnx_model_fixtures.py [name ...]

npz keys: ``<batch>x<seq>/in/<k>`` and ``<batch>x<seq>/out/<k>`` (inputs and outputs in order).
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.torch_onnx_models import FIXTURE_BUILDERS, export, run_torch  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "torch_onnx"


def main(argv=None) -> int:
    import torch

    names = list(sys.argv[1:] if argv is None else argv) or list(FIXTURE_BUILDERS)
    unknown = sorted(set(names) - set(FIXTURE_BUILDERS))
    if unknown:
        print(f"unknown model(s) {unknown}; known: {sorted(FIXTURE_BUILDERS)}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        built = FIXTURE_BUILDERS[name]()
        tmp = OUT / f".{name}.onnx.tmp"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            export(built, tmp)
        os.replace(tmp, OUT / f"{name}.onnx")
        store = {}
        for batch, seq in built.sizes:
            inputs = built.make_inputs(batch, seq)
            for k, a in enumerate(inputs):
                store[f"{batch}x{seq}/in/{k}"] = a
            for k, a in enumerate(run_torch(built, inputs)):
                store[f"{batch}x{seq}/out/{k}"] = a
        tmp = OUT / f".{name}.tmp.npz"
        np.savez_compressed(tmp, **store)
        os.replace(tmp, OUT / f"{name}.npz")
        print(f"{name}: {(OUT / f'{name}.onnx').stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
