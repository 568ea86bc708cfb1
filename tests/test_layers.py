"""Layers import only downward (docs/contributing.md, "Layers"): errors < registry < core <
passes < formats < runtime < trace < the rest (nn, optim, testing, cli, tools, integrations, the
package itself). Function-level imports count too: a lazy upward import is still an upward
dependency. And no distribution (onemodel, each plugins/* package, the example plugin) imports
a private name of another: what a plugin needs from the core is public API."""
import ast
import pathlib

import pytest

import onemodel as om

ROOT = pathlib.Path(om.__file__).parent
REPO = pathlib.Path(__file__).resolve().parents[1]
RANK = {"errors": 0, "_version": 0, "registry": 1, "core": 2, "passes": 3, "formats": 4,
        "runtime": 5, "trace": 6}
TOP = 7


def layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[0] != "onemodel":
        return -1
    if len(parts) == 1:
        return TOP
    return RANK.get(parts[1], TOP)


def _package_of(path: pathlib.Path, base: pathlib.Path) -> list[str]:
    return list(path.relative_to(base).with_suffix("").parts[:-1])


def imported(path: pathlib.Path, base: pathlib.Path):
    """``(line, module, name or None, relative)`` for every import in ``path`` (a module under
    ``base``, the folder holding its top package), at any depth: module level, inside functions
    and classes, and ``importlib.import_module("literal")``. ``from m import a`` yields ``m`` with
    ``a``; ``from . import x`` yields the package with ``x``."""
    package = _package_of(path, base)
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None, False
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                head = package[: len(package) - node.level + 1]
                module = ".".join(head + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield node.lineno, module, alias.name, bool(node.level)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value, None, False


def imports(path: pathlib.Path, base: pathlib.Path = ROOT.parent):
    """``(line, target module)``: ``from .. import formats`` targets ``onemodel.formats`` (a
    submodule), ``from ..formats import save`` targets ``onemodel.formats``."""
    seen = set()
    for line, module, name, _relative in imported(path, base):
        sub = f"{module}.{name}" if name is not None else None
        target = sub if sub is not None and _is_module(sub, base) else module
        if (line, target) not in seen:
            seen.add((line, target))
            yield line, target


def _is_module(module: str, base: pathlib.Path) -> bool:
    where = base.joinpath(*module.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def offenders(root: pathlib.Path = ROOT):
    found = []
    for path in sorted(root.rglob("*.py")):
        src = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        src_rank = layer_of(src.removesuffix(".__init__"))
        if src_rank == TOP:
            continue
        for line, target in imports(path, root.parent):
            if layer_of(target) > src_rank:
                found.append(f"{path.relative_to(root.parent)}:{line} imports {target}")
    return found


def test_layers_import_only_downward():
    found = offenders()
    assert not found, "upward imports:\n  " + "\n  ".join(found)


def test_the_walker_sees_lazy_relative_imports():
    probe = ROOT / "trace" / "tracer.py"  # Tracer.finish imports TracedModel inside the method
    targets = {t for _l, t in imports(probe)}
    assert "onemodel.runtime.traced_model" in targets and "onemodel.core.graph" in targets


def test_the_walker_flags_a_lazy_upward_import(tmp_path):
    for package in ("onemodel", "onemodel/core", "onemodel/runtime"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    core = tmp_path / "onemodel" / "core"
    (core / "probe.py").write_text("def f():\n    from .. import runtime\n"
                                   "    from ..formats import save\n"
                                   "    importlib.import_module('onemodel.passes')\n")
    found = offenders(tmp_path / "onemodel")
    assert found == ["onemodel/core/probe.py:2 imports onemodel.runtime",
                     "onemodel/core/probe.py:3 imports onemodel.formats",
                     "onemodel/core/probe.py:4 imports onemodel.passes"]


def test_the_runtime_sits_above_passes_and_formats_and_below_trace():
    assert RANK["formats"] < RANK["runtime"] < RANK["trace"] < TOP
    targets = {t for _l, t in imports(ROOT / "runtime" / "session.py")}
    assert {"onemodel.passes", "onemodel.formats"} <= targets  # direct imports, no locator
    assert not (ROOT / "core" / "layers.py").exists()


# -- cycles ------------------------------------------------------------------------------------
def _import_time_nodes(body):
    """The statements that run when a module is imported: not function bodies (lazy imports,
    which cannot make a partly-initialised module fail), everything else at any depth."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _import_time_nodes(getattr(node, field, ()) or ())


def module_graph(package_dir: pathlib.Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports when imported (module level)."""
    base = package_dir.parent
    files = {".".join(p.relative_to(base).with_suffix("").parts).removesuffix(".__init__"): p
             for p in package_dir.rglob("*.py")}

    def known(module: str) -> str | None:
        while module and module not in files:
            module = module.rpartition(".")[0]
        return module or None

    graph = {}
    for name, path in files.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        out = set()
        for node in _import_time_nodes(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                out |= {known(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                head = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join(head + ([node.module] if node.module else []))
                for a in node.names:
                    sub = f"{module}.{a.name}"
                    out.add(sub if sub in files else known(module))
        graph[name] = out - {None, name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(tuple(sorted(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _packages(repo: pathlib.Path = REPO) -> list[pathlib.Path]:
    dirs = plugin_dirs(repo)
    return [repo / "onemodel"] + [dirs[dist] / pkg for pkg, dist in distributions(repo).items()
                                  if dist != "onemodel"]


def test_no_module_level_import_cycles():
    """A cycle among module-level imports holds only by import order: whichever module is
    imported first decides whether the other finds its names."""
    found = [c for pkg in _packages() for c in cycles(module_graph(pkg))]
    assert not found, "import cycles:\n  " + "\n  ".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_sees_a_cycle_but_not_a_lazy_one(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .c import g\n")
    (pkg / "c.py").write_text("from . import b\ntry:\n    from .a import f\nexcept ImportError:\n"
                              "    pass\n")
    assert module_graph(pkg)["pkg.b"] == set()  # a lazy import makes no import-time edge
    assert cycles(module_graph(pkg)) == []
    (pkg / "b.py").write_text("from .c import g\n")
    assert cycles(module_graph(pkg)) == [("pkg.a", "pkg.b", "pkg.c")]


def mutual_imports(package_dir: pathlib.Path) -> set[tuple[str, str]]:
    """Pairs of modules of one package that import each other, lazy imports included."""
    base = package_dir.parent
    names = {".".join(p.relative_to(base).with_suffix("").parts).removesuffix(".__init__"): p
             for p in package_dir.rglob("*.py")}
    edges = set()
    for name, path in names.items():
        for _line, target in imports(path, base):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add((name, target))
    return {(a, b) for a, b in edges if a < b and (b, a) in edges}


def test_the_interpreter_and_the_dynamic_plan_do_not_import_each_other():
    """Both report a failed kernel with `node_error`, which lives below them (`node_errors`)."""
    pair = ("onemodel.core.dynamic_plan", "onemodel.core.interpreter")
    assert pair not in mutual_imports(ROOT)

# -- private names across distributions --------------------------------------------------------
def plugin_dirs(repo: pathlib.Path = REPO) -> dict[str, pathlib.Path]:
    """Distribution name -> folder, for each plugins/* package and each examples/* package
    (a folder with a pyproject.toml: the example plugin is copied by plugin authors)."""
    dirs = [d for d in sorted((repo / "plugins").iterdir()) if d.is_dir()]
    if (repo / "examples").is_dir():
        dirs += [d for d in sorted((repo / "examples").iterdir())
                 if (d / "pyproject.toml").is_file()]
    return {d.name: d for d in dirs}


def distributions(repo: pathlib.Path = REPO) -> dict[str, str]:
    """Top-level package -> the distribution that ships it (``onemodel`` and each plugin)."""
    found = {"onemodel": "onemodel"}
    for name, dist in plugin_dirs(repo).items():
        for pkg in sorted(dist.iterdir()):
            if (pkg / "__init__.py").is_file() and pkg.name != "tests":
                found[pkg.name] = name
    return found


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _sources(repo: pathlib.Path):
    """``(distribution, file, the folder its imports are relative to)`` for every module of
    onemodel/ and of each plugin (their tests included)."""
    for path in sorted((repo / "onemodel").rglob("*.py")):
        yield "onemodel", path, repo
    for name, dist in plugin_dirs(repo).items():
        for path in sorted(dist.rglob("*.py")):
            rel = path.relative_to(dist).parts
            if any(p == "build" or p.endswith(".egg-info") for p in rel):
                continue
            yield name, path, dist


def private_imports(repo: pathlib.Path = REPO) -> dict[tuple[str, str], int]:
    """``(file, imported name) -> line`` for each import of another distribution's private
    module or name."""
    owners = distributions(repo)
    found = {}
    for dist, path, base in _sources(repo):
        for line, module, name, relative in imported(path, base):
            owner = owners.get(module.split(".")[0])
            if relative or owner is None or owner == dist:
                continue
            full = module if name is None else f"{module}.{name}"
            if any(_private(p) for p in full.split(".")):
                found[(path.relative_to(repo).as_posix(), full)] = line
    return found


def test_no_distribution_imports_a_private_name_of_another():
    found = private_imports()
    assert not found, "private imports across distributions (make the name public API):\n  " + \
        "\n  ".join(f"{f}:{line} imports {name}" for (f, name), line in sorted(found.items()))


def test_the_private_check_sees_names_and_modules(tmp_path):
    (tmp_path / "onemodel" / "core").mkdir(parents=True)
    for f in ("onemodel/__init__.py", "onemodel/core/__init__.py"):
        (tmp_path / f).write_text("")
    (tmp_path / "onemodel" / "core" / "_impl.py").write_text("from ._impl import _own\n")
    pkg = tmp_path / "plugins" / "onemodel-backend-x" / "onemodel_backend_x"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import _mine\n")
    (pkg / "use.py").write_text("from onemodel.core import Tensor, __all__\n"
                                "def f():\n    from onemodel.core.plan import _CodeGen\n"
                                "import onemodel.core._impl\n")
    found = private_imports(tmp_path)
    assert found == {
        ("plugins/onemodel-backend-x/onemodel_backend_x/use.py", "onemodel.core.plan._CodeGen"): 3,
        ("plugins/onemodel-backend-x/onemodel_backend_x/use.py", "onemodel.core._impl"): 4}


@pytest.mark.parametrize("plugin", sorted(set(distributions().values()) - {"onemodel"}))
def test_a_plugin_imports_no_other_plugin(plugin):
    owners = distributions()
    dist = plugin_dirs()[plugin]
    bad = [f"{path.relative_to(REPO)}:{line} imports {module}"
           for d, path, base in _sources(REPO) if d == plugin
           for line, module, _n, relative in imported(path, base)
           if not relative and owners.get(module.split(".")[0], plugin) not in (plugin, "onemodel")]
    assert dist.is_dir() and not bad, "\n".join(bad)
