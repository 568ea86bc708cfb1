"""Reference for sized_from_data (onemodel-ops-basic): onnx's own reference evaluator running
the one-node ONNX model of the same kind."""
import numpy as np


def _sized_from_data(x=None, a=None, b=None, c=None, d=None, *, kind, dims, axis=-1, axes=None,
                     periodic=True, dtype=None):
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    given = [x, b, a] if kind == "DFT" else [x, a, b, c, d]  # ONNX's DFT: x, dft_length, axis
    while given and given[-1] is None:
        given.pop()
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(given)]
    arrays = [v for v in given if v is not None]
    attrs = {}
    if kind == "OneHot":
        attrs["axis"] = axis
    elif kind == "Col2Im":
        for name, v in zip(("dilations", "pads", "strides"), axes or (None, None, None)):
            if v is not None:
                attrs[name] = list(v)
    elif kind == "AffineGrid":
        attrs["align_corners"] = int(periodic)
    elif kind == "NonMaxSuppression":
        attrs["center_point_box"] = int(axis == 1)
    elif kind == "CenterCropPad" and axes is not None:
        attrs["axes"] = list(axes)
    elif kind == "DFT":
        attrs["inverse"], attrs["onesided"] = axes
    elif kind == "STFT":
        attrs["onesided"] = int(periodic)
    elif kind.endswith("Window") or kind == "MelWeightMatrix":
        if kind != "MelWeightMatrix":
            attrs["periodic"] = int(periodic)
        if dtype is not None:
            attrs["output_datatype"] = helper.np_dtype_to_tensor_dtype(dtype.numpy)
    node = helper.make_node(kind, names, ["o"], **attrs)
    feeds = {n: np.asarray(v) for n, v in zip([n for n in names if n], arrays)}
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                    v.shape) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info("o")]),
        opset_imports=[helper.make_opsetid("", 21)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


REFERENCES = {"sized_from_data": _sized_from_data}
