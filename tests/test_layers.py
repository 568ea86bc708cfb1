"""Layers import only downward (ARCHITECTURE.md): registry < core < trace < passes < formats < the
rest (nn, optim, cli, tools, the package itself). Function-level imports count too: a lazy
upward import is still an upward dependency. Upper layers hand the core what it needs through
`onemodel.core.layers`."""
import ast
import pathlib

import pytest

import onemodel as om
from onemodel import OneModelError
from onemodel.core import layers

ROOT = pathlib.Path(om.__file__).parent
RANK = {"errors": 0, "_version": 0, "registry": 1, "core": 2, "trace": 3, "passes": 4, "formats": 5}
TOP = 6


def layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[0] != "onemodel":
        return -1
    if len(parts) == 1:
        return TOP
    return RANK.get(parts[1], TOP)


def imports(path: pathlib.Path):
    rel = path.relative_to(ROOT.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None or (node.level and not node.module):
                for alias in node.names:  # from .. import formats
                    yield node.lineno, f"{target}.{alias.name}"
            else:
                yield node.lineno, target


def offenders():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        src = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        src_rank = layer_of(src.removesuffix(".__init__"))
        if src_rank == TOP:
            continue
        for line, target in imports(path):
            if layer_of(target) > src_rank:
                found.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    return found


def test_layers_import_only_downward():
    found = offenders()
    assert not found, "upward imports:\n  " + "\n  ".join(found)


def test_the_walker_sees_lazy_relative_imports(tmp_path):
    probe = ROOT / "core" / "session.py"
    targets = {t for _l, t in imports(probe)}
    assert "onemodel.core.layers" in targets and "onemodel.registry" in targets


def test_upper_layers_provide_the_core_services():
    for name in layers.SERVICES:
        assert callable(layers.service(name))
    with pytest.raises(OneModelError, match="unknown core service"):
        layers.provide("no_such_service", print)
