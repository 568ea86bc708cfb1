"""The public ONNX API for plugin authors (onemodel.formats.onnx_api): one dtype table for import
and export, tensor attributes, the import context's refusals, and the checked attachment of a
plugin's mappings to its ops (a mapping naming no op raises instead of being dropped)."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import onemodel as om
from onemodel.core.dtype import DType
from onemodel.registry import OnnxSpec, OpDef, Param, Sample, hookimpl

onnx = pytest.importorskip("onnx")

from onemodel.formats import onnx_api, onnx_export, onnx_import  # noqa: E402

helper = onnx.helper
TP = onnx.TensorProto


# -- dtypes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DType), ids=str)
def test_every_dtype_has_the_onnx_code_onnx_gives_its_numpy_dtype(dtype):
    code = onnx_api.onnx_dtype(dtype)
    assert helper.tensor_dtype_to_np_dtype(code) == np.dtype(dtype.numpy)  # onnx's own table
    assert onnx_api.dtype_from_onnx(code) is dtype


def test_import_and_export_share_one_dtype_table():
    assert onnx_export.ONNX_TO_DTYPE is onnx_api.ONNX_TO_DTYPE
    assert onnx_import.ONNX_TO_DTYPE is onnx_api.ONNX_TO_DTYPE
    assert onnx_export.onnx_dtype is onnx_api.onnx_dtype
    assert {v: k for k, v in onnx_api.DTYPE_TO_ONNX.items()} == onnx_api.ONNX_TO_DTYPE


@pytest.mark.parametrize("code,name", [(TP.BFLOAT16, "bfloat16"), (TP.STRING, "string"),
                                       (TP.COMPLEX64, "complex64"), (999, "999")])
def test_a_type_onemodel_does_not_represent_is_refused_by_name(code, name):
    with pytest.raises(onnx_api.OnnxUnsupportedError, match=rf"element type {code}\b.*{name}"
                       if name != str(code) else rf"element type {code} has no"):
        onnx_api.dtype_from_onnx(code)
    assert onnx_api.onnx_type_name(code) == name


def test_the_import_context_refuses_a_dtype_naming_the_node():
    ctx = onnx_import.ImportContext(17)
    ctx.current = onnx_api.OnnxNode("EyeLike", ["x"], ["y"], {"dtype": 16}, name="eye")
    assert ctx.dtype(TP.INT32, "EyeLike dtype") is DType.I32
    with pytest.raises(onnx_api.OnnxUnsupportedError,
                       match=r"EyeLike node 'eye'.*EyeLike dtype: ONNX element type 16 "
                             r"\(bfloat16\)"):
        ctx.dtype(16, "EyeLike dtype")


# -- tensor attributes ---------------------------------------------------------------------------
def test_tensor_attributes_round_trip_through_a_tensor_proto():
    arr = np.arange(6, dtype=np.int16).reshape(2, 3)
    proto = onnx_api.tensor_attribute(arr, "value")
    assert isinstance(proto, TP) and proto.data_type == TP.INT16 and list(proto.dims) == [2, 3]
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(proto), arr)  # onnx reads it back
    back = onnx_api.tensor_array(proto)
    assert back.dtype == np.int16
    np.testing.assert_array_equal(back, arr)


def test_reading_a_tensor_of_an_unrepresented_dtype_is_refused():
    proto = helper.make_tensor("w", TP.BFLOAT16, [1], [0])
    with pytest.raises(onnx_api.OnnxUnsupportedError, match=r"'w' has dtype bfloat16"):
        onnx_api.tensor_array(proto, "initializer 'w'")


def test_node_tensor_reads_a_tensor_attribute_and_refuses_anything_else():
    node = onnx_api.OnnxNode("ConstantOfShape", ["s"], ["y"],
                             {"value": np.array([2.5], np.float32), "k": 3})
    np.testing.assert_array_equal(node.tensor("value"), [2.5])
    assert node.tensor("absent") is None
    with pytest.raises(onnx_api.OnnxUnsupportedError, match=r"attribute 'k' must be a tensor"):
        node.tensor("k")


def test_the_api_module_loads_neither_onnx_nor_the_import_machinery():
    """Plugins import it at the top of the module their hook loads: it must stay cheap."""
    code = ("import sys, onemodel.formats.onnx_api as api\n"
            "assert 'onnx' not in sys.modules, 'onnx'\n"
            "assert 'onemodel.formats.onnx_import' not in sys.modules, 'onnx_import'\n"
            "assert api.OnnxNode.__name__ == 'OnnxNode'\n")  # loaded on first use
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]


# -- a plugin written against the API only, registered at run time -------------------------------
def _scale_kernel(x, alpha=1.0, dtype=None):
    return (x * alpha).astype(dtype.numpy if dtype is not None else x.dtype)


def _import_scale(ctx, node):
    """``ApiTestScale(x) -> x * alpha`` with ``alpha`` a one-element tensor attribute and the
    result dtype an ONNX element type code."""
    alpha = node.tensor("alpha")
    if alpha is None or alpha.size != 1:
        ctx.unsupported("alpha must be a one-element tensor")
    dtype = ctx.dtype(node.attr("to", TP.FLOAT), "ApiTestScale to")
    return [ctx.emit("api_test_scale", [node.inputs[0]], alpha=float(alpha.reshape(-1)[0]),
                     dtype=dtype)]


def _scale_op() -> OpDef:
    from onemodel.core.types import TensorType

    return OpDef(name="api_test_scale", inputs=("x",),
                 params={"alpha": Param(kind="float", default=1.0),
                         "dtype": Param(kind="dtype", default=None, optional=True)},
                 kernel=_scale_kernel,
                 infer=lambda x, alpha=1.0, dtype=None: TensorType(dtype or x.dtype, x.shape),
                 vjp=None, samples=lambda rng: [Sample(args=(rng.standard_normal((2, 3)),))],
                 doc="x * alpha, from a test plugin")


def _plugin(mappings: dict):
    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return onnx_api.attach_onnx([_scale_op()], mappings, plugin="api-test")

    return Plugin()


def _scale_model(to: int):
    node = helper.make_node("ApiTestScale", ["x"], ["y"], to=to,
                            alpha=helper.make_tensor("alpha", TP.FLOAT, [1], [3.0]))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_run_time_plugin_imports_onnx_through_the_public_api(registered):
    registered(_plugin({"api_test_scale": OnnxSpec(imports={"ApiTestScale": _import_scale})}),
               "api-test")
    assert "ApiTestScale" in onnx_import.claimed_op_types()
    graph = onnx_import.from_onnx(_scale_model(TP.DOUBLE))
    assert [n.op for n in graph.nodes] == ["api_test_scale"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with om.Session(graph, backend="numpy") as s:
        y = s.run({"x": x})["y"].numpy()
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64) * 3.0)
    with pytest.raises(onnx_api.OnnxUnsupportedError,
                       match=r"ApiTestScale to: ONNX element type 16 \(bfloat16\)"):
        onnx_import.from_onnx(_scale_model(TP.BFLOAT16))


def test_attach_onnx_refuses_a_mapping_for_an_op_the_plugin_does_not_define():
    spec = OnnxSpec(imports={"ApiTestScale": _import_scale})
    with pytest.raises(onnx_api.OnnxMappingError,
                       match=r"plugin 'api-test'.*'api_test_scael' \(did you mean "
                             r"'api_test_scale'\?\)") as info:
        onnx_api.attach_onnx([_scale_op()], {"api_test_scael": spec}, plugin="api-test")
    assert isinstance(info.value, om.OneModelError) and info.value.plugin == "api-test"
    with pytest.raises(onnx_api.OnnxMappingError, match=r"op 'api_test_scale'.*an OnnxSpec"):
        onnx_api.attach_onnx([_scale_op()], {"api_test_scale": {"Relu": _import_scale}},
                             plugin="api-test")
    import attrs

    inline = attrs.evolve(_scale_op(), onnx=spec)
    with pytest.raises(onnx_api.OnnxMappingError, match=r"'api_test_scale' has an OnnxSpec in "
                                                        r"its record and another"):
        onnx_api.attach_onnx([inline], {"api_test_scale": spec}, plugin="api-test")


def test_a_run_time_plugin_whose_mapping_names_no_op_is_reported_not_dropped(registered):
    """The registry turns a hook that raises into the plugin's load error (a broken plugin does
    not take the others down): the message names the op and the plugin."""
    registered(_plugin({"api_test_scael": OnnxSpec(imports={"ApiTestScale": _import_scale})}),
               "api-test")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        om.registry.REGISTRY.tables()
    messages = [str(e) for e in om.registry.errors() if e.plugin == "api-test"]
    assert any("OnnxMappingError" in m and "'api_test_scael'" in m and "'api-test'" in m
               for m in messages), messages
    assert any("api_test_scael" in str(w.message) for w in caught)
    assert "ApiTestScale" not in onnx_import.claimed_op_types()


def test_add_import_rules_refuses_a_second_rule_for_an_op_type():
    mappings = {"api_test_scale": OnnxSpec(imports={"ApiTestScale": _import_scale})}
    onnx_api.add_import_rules(mappings, "api_test_scale", {"ApiTestScale2": _import_scale})
    assert set(mappings["api_test_scale"].imports) == {"ApiTestScale", "ApiTestScale2"}
    with pytest.raises(onnx_api.OnnxMappingError, match=r"ApiTestScale given twice"):
        onnx_api.add_import_rules(mappings, "api_test_scale", {"ApiTestScale": _import_scale})


def test_add_import_rules_replaces_only_a_rule_that_is_there():
    def wrapped(ctx, node):
        return _import_scale(ctx, node)

    mappings = {"api_test_scale": OnnxSpec(imports={"ApiTestScale": _import_scale})}
    onnx_api.add_import_rules(mappings, "api_test_scale", {"ApiTestScale": wrapped}, replace=True)
    assert mappings["api_test_scale"].imports["ApiTestScale"] is wrapped
    with pytest.raises(onnx_api.OnnxMappingError, match=r"no import rule for ApiTestScale9"):
        onnx_api.add_import_rules(mappings, "api_test_scale", {"ApiTestScale9": wrapped},
                                  replace=True)


def test_the_shipped_plugins_import_nothing_private_from_onemodel_formats():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    bad = []
    for path in sorted(root.glob("plugins/*/onemodel_*/**/*.py")) + sorted(
            root.glob("examples/*/onemodel_*/**/*.py")):
        for k, line in enumerate(path.read_text().splitlines(), 1):
            m = re.search(r"from onemodel\.formats(\.\w+)* import (.*)", line)
            if m and (re.search(r"\b_\w+", m.group(2)) or
                      re.search(r"onemodel\.formats\.(onnx_import|onnx_export)\b", line)):
                bad.append(f"{path.relative_to(root)}:{k}: {line.strip()}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", ["onemodel_ops_basic.plugin", "onemodel_ops_nn.plugin"])
def test_the_shipped_plugins_attach_their_mappings_checked(module, monkeypatch):
    """A misspelt key in a shipped plugin's mapping table fails its hook instead of vanishing."""
    import importlib

    plugin = importlib.import_module(module)
    monkeypatch.setitem(plugin.ONNX, "no_such_op_anywhere", OnnxSpec(imports={}))
    with pytest.raises(onnx_api.OnnxMappingError, match=r"'no_such_op_anywhere'.*which the "
                                                        r"plugin does not define"):
        plugin.all_ops()
