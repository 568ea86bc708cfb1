"""Graphs held in node params (the branches and bodies of control flow, issue 25): the core
treats them generically in verification, printing, the OneModel format and plan digests."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import onemodel as om
from onemodel.core.dtype import DType
from onemodel.core.graph import Graph, GraphBuilder
from onemodel.core.subgraphs import subgraphs, walk_nodes
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.errors import FormatError, GraphError
from onemodel.formats.onemodel_file import dumps, load_graph

F32 = DType.F32
N = Dim.symbol("n")


def _branch(op: str, scale: float) -> Graph:
    b = GraphBuilder()
    b.add_input("x", TensorType(F32, (N, 3)))
    b.add_initializer("k", np.full((3,), scale, np.float32))
    (y,) = b.add_node(op, ["x", "k"], [TensorType(F32, (N, 3))])
    return b.finish([("out0", y.name)])


def _model(then_scale=2.0) -> Graph:
    b = GraphBuilder()
    b.add_input("p", TensorType(DType.BOOL, ()))
    b.add_input("x", TensorType(F32, (N, 3)))
    (y,) = b.add_node("cond", ["p", "x"], [TensorType(F32, (N, 3))],
                      {"then_branch": _branch("mul", then_scale),
                       "else_branch": _branch("add", 1.0), "dims": ((N, 3),)})
    return b.finish([("y", y.name)]).verify()


def _run(graph, p, x):
    with om.Session(graph, backend="numpy") as s:
        return s.run({"p": np.array(p), "x": x})["y"].numpy()


def test_a_subgraph_param_saves_and_loads_as_data():
    g = _model()
    data = dumps(g)
    back = load_graph(io.BytesIO(data))
    assert str(back) == str(g)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(_run(back, True, x), x * 2)
    np.testing.assert_array_equal(_run(back, False, x), x + 1)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    param = manifest["graph"]["nodes"][0]["params"]["then_branch"]
    assert set(param) == {"$graph"} and param["$graph"]["nodes"][0]["op"] == "mul"
    assert sorted(manifest["ops"]) == ["add", "cond", "mul"]  # the subgraphs' ops too


def test_printing_shows_the_subgraphs():
    text = str(_model())
    assert "then_branch=graph (%x: f32[n,3])" in text and "= mul(%x, %k)" in text


def test_walk_nodes_enters_subgraphs():
    g = _model()
    assert [n.op for n in walk_nodes(g)] == ["cond", "mul", "add"]
    assert [name for name, _ in subgraphs(g.nodes[0])] == ["then_branch", "else_branch"]


def test_verify_checks_a_subgraph_and_names_it():
    g = _model()
    bad = _branch("mul", 2.0).replace(outputs=(("out0", "missing"),))
    node = g.nodes[0]
    broken = g.replace(nodes=(node.__class__(node.op, node.inputs, node.outputs,
                                             {**node.params, "else_branch": bad}),))
    with pytest.raises(GraphError, match=r"subgraph 'else_branch'.*undefined value %missing"):
        broken.verify()


def test_a_subgraph_with_an_unknown_op_is_refused_when_loading():
    data = dumps(_model())
    zin = zipfile.ZipFile(io.BytesIO(data))
    manifest = json.loads(zin.read("manifest.json"))
    manifest["graph"]["nodes"][0]["params"]["then_branch"]["$graph"]["nodes"][0]["op"] = "nope"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            body = json.dumps(manifest).encode() if info.filename == "manifest.json" \
                else zin.read(info)
            zout.writestr(info, body)
    with pytest.raises(FormatError, match=r"nope"):
        load_graph(io.BytesIO(out.getvalue()))


def test_a_graph_tag_outside_a_file_is_refused():
    from onemodel.formats import params_codec

    with pytest.raises(FormatError, match=r"\$graph"):
        params_codec.decode({"$graph": {}})


def test_the_plan_digest_sees_inside_subgraphs():
    pytest.importorskip("onemodel_backend_compiled")
    from onemodel.registry import REGISTRY
    from onemodel_backend_compiled.plan_cache import graph_digest

    ops = REGISTRY.tables().ops
    a, b = graph_digest(_model(2.0), ops, {}), graph_digest(_model(3.0), ops, {})
    assert a is not None and b is not None and a != b


def test_a_graph_with_subgraphs_pickles():
    import pickle

    g = _model()
    back = pickle.loads(pickle.dumps(g))
    assert str(back) == str(g)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(_run(back, True, x), _run(g, True, x))


def test_subgraphs_nested_too_deep_are_refused_when_loading():
    g = _model()
    for _ in range(9):  # a cond whose branches are the previous model
        node = g.nodes[0]
        b = GraphBuilder()
        b.add_input("p", TensorType(DType.BOOL, ()))
        b.add_input("x", TensorType(F32, (N, 3)))
        (y,) = b.add_node("cond", ["p", "p", "x"], [TensorType(F32, (N, 3))],
                          {"then_branch": g, "else_branch": g, "dims": ((N, 3),)})
        g = b.finish([("y", y.name)])
        assert node.op == "cond"
    with pytest.raises(FormatError, match=r"nest more than 8"):
        load_graph(io.BytesIO(dumps(g)))
