"""The core knows no concrete op: no string literal in ``onemodel/`` equals the name of an op a
plugin owns (ops the core registers itself, the fused ``elementwise_chain``, are its own)."""
from __future__ import annotations

import ast
import pathlib

import onemodel as om

CORE = pathlib.Path(om.__file__).parent

#: words that are ordinary vocabulary of the core and only happen to be op names too: the
#: optimisation level "all", Param kinds "any" / "index", the symbolic atoms "min" / "max",
#: `OpTraits.view` kinds, the numpy error mode "log", `special.__all__` and pattern keywords
#: (the pattern kind "var", any value, is not the variance op).
VOCABULARY = {"all", "any", "index", "min", "max", "reshape", "permute", "expand", "log",
              "erf", "where", "var"}

#: (file relative to onemodel/, name): why the literal is not a reference to the op
ALLOWED = {
    # PyTorch's nn.init.calculate_gain takes these nonlinearity names as its API; they name a
    # gain, not an op, and a model moving over from PyTorch passes them unchanged.
    ("nn/init.py", "conv2d"), ("nn/init.py", "sigmoid"), ("nn/init.py", "tanh"),
    ("nn/init.py", "relu"), ("nn/init.py", "linear"), ("nn/init.py", "leaky_relu"),
    ("nn/init.py", "selu"), ("nn/init.py", "conv1d"),
    ("nn/init.py", "conv_transpose1d"), ("nn/init.py", "conv_transpose2d"),
    # PyTorch's optimizer and scheduler API: Adagrad's state key "sum", OneCycleLR's
    # anneal_strategy "cos" / "linear", ReduceLROnPlateau's threshold_mode "abs"; settings and
    # state_dict keys a torch checkpoint carries, not ops
    ("optim/adagrad.py", "sum"), ("optim/lr_scheduler/cyclic.py", "cos"),
    ("optim/lr_scheduler/cyclic.py", "linear"), ("optim/lr_scheduler/plateau.py", "abs"),
    # the benchmark models' names (benchmarks/bench_models.py), keys of their descriptions
    ("tools/write_benchmarks.py", "lstm"), ("tools/write_benchmarks.py", "gru"),
    # names in messages and ONNX node names, not op lookups
    ("core/tensor.py", "arange"), ("core/tensor.py", "full"), ("formats/onnx_export.py", "cast"),
    # `OpTraits.epilogue` kinds: a fixed vocabulary of activation functions a GEMM or a
    # convolution may apply in registers (records.EPILOGUE_KINDS), and the testing kit's float64
    # function of each; an op declares which one it is, no op is looked up by these names
    *{(f, kind) for f in ("registry/records.py", "testing/op_checks.py")
      for kind in ("relu", "sigmoid", "tanh", "gelu", "hardswish", "clip", "hardsigmoid",
                   "swish")},
}

#: real references still to move out of the core (a ratchet: the test fails when one goes, so
#: the list only shrinks). Empty: casts go through the __cast__ protocol.
PENDING: set = set()


def _plugin_ops() -> set[str]:
    return {name for name, op in om.registry.ops().items()
            if not (op.provider or "").startswith("onemodel ") and op.provider != "onemodel"}


def offenders() -> list[tuple[str, int, str]]:
    names = _plugin_ops()
    found = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef,
                                        ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)
                      and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names and id(node) not in docstrings
                    and node.value not in VOCABULARY and (rel, node.value) not in ALLOWED):
                found.append((rel, node.lineno, node.value))
    return found


def test_plugin_ops_are_known():
    assert {"add", "relu", "linear", "gelu"} <= _plugin_ops()
    assert "elementwise_chain" not in _plugin_ops()


def test_core_names_no_plugin_op():
    found = [o for o in offenders() if (o[0], o[2]) not in PENDING]
    assert not found, "plugin op names in the core:\n" + "\n".join(
        f"  onemodel/{f}:{line}: {name!r}" for f, line, name in found)


def test_pending_references_still_exist():
    left = {(f, name) for f, _, name in offenders()}
    gone = PENDING - left
    assert not gone, f"remove {sorted(gone)} from PENDING: they no longer occur"
