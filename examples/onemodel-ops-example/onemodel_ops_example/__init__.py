"""An example third-party op package for OneModel: `rms_norm_last` and `swish`.

Installing it (``pip install -e examples/onemodel-ops-example``) makes both ops appear in
``onemodel ops`` and work eagerly, under autograd, in traces, in every backend and in ONNX —
with no change to OneModel itself. docs/guide/plugins.md walks through it.
"""
