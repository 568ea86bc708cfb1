"""The engines we compare against, beside ONNX Runtime (`bench.ort_runner`): OpenVINO on the
CPU, set up as docs/benchmarks.md says (float32 precision, one stream, latency hint, the given
threads). Nothing here is a dependency: each returns None or raises when its engine is absent."""
from __future__ import annotations

import os
from typing import Callable, Mapping

import numpy as np

from ..errors import OneModelError


def openvino_version() -> str | None:
    try:
        import openvino
    except ImportError:
        return None
    # "2026.4.1-22982-e213a14-releases/2026/4": the release, not the build
    return str(openvino.__version__).split("-")[0]


def openvino_runner(onnx_path: str | os.PathLike, threads: int,
                    feeds: Mapping[str, np.ndarray]) -> Callable[[], object]:
    """A function running ``feeds`` on OpenVINO's CPU plugin with ``threads`` inference
    threads, f32 inference precision (no bf16 or f16 down-casting), one stream and the latency
    hint: the peer set-up of issue 26."""
    import openvino as ov

    core = ov.Core()
    model = core.read_model(os.fspath(onnx_path))
    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": int(threads),
              "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
    compiled = core.compile_model(model, "CPU", config)
    names = [p.get_any_name() for p in compiled.inputs]
    missing = [n for n in names if n not in feeds]
    if missing:
        raise OneModelError(f"OpenVINO wants input(s) {missing} that the model's feeds lack")
    request = compiled.create_infer_request()
    ov_feeds = {n: np.ascontiguousarray(feeds[n]) for n in names}

    def call():
        return request.infer(ov_feeds)

    return call


__all__ = ["openvino_version", "openvino_runner"]
