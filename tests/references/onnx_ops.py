"""References for the ops that exist for ONNX files (``resize``...): onnx's own reference
evaluator running the one-node ONNX model the op stands for, written apart from the kernels."""
import numpy as np


def _run_onnx(op_type, arrays, attrs, n_out=1, opset=21):
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" if v is not None else "" for k, v in enumerate(arrays)]
    while names and not names[-1]:
        names.pop()
    feeds = {n: np.asarray(v) for n, v in zip(names, arrays) if n}
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                    v.shape) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs]),
        opset_imports=[helper.make_opsetid("", opset)])
    res = ReferenceEvaluator(model).run(None, feeds)
    return tuple(res) if n_out > 1 else res[0]


def resize(x, roi=None, scales=None, sizes=None, *, dims, axes=(), exclude_outside=False,
           antialias=False, **attrs):
    attrs = dict(attrs, exclude_outside=int(exclude_outside), antialias=int(antialias))
    if axes:
        attrs["axes"] = list(axes)
    if roi is None and attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        roi = np.zeros(0, np.float32)
    return _run_onnx("Resize", [x, roi, scales, sizes], attrs)


REFERENCES = {"resize": resize}
