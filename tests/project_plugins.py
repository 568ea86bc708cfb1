"""The project's own distributions: the core and every package under plugins/ and examples/.

Tests that compare the registry with something committed (the op table in the docs, the pinned
ONNX conformance cases) judge only what these provide, so they still hold with third-party
plugins installed (tests/test_third_party_installed.py). Used by tools/update_ops_table.py too.
"""
from __future__ import annotations

import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _name(pyproject: pathlib.Path) -> str:
    text = pyproject.read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python 3.10: the [project] table's name line
        section = text.split("[project]", 1)[1]
        return re.search(r'(?m)^name\s*=\s*"([^"]+)"', section).group(1)
    return tomllib.loads(text)["project"]["name"]


@functools.cache
def project_distributions() -> frozenset[str]:
    """The distribution names this repository ships (``onemodel``, ``onemodel-ops-basic``...)."""
    files = [ROOT / "pyproject.toml", *sorted(ROOT.glob("plugins/*/pyproject.toml")),
             *sorted(ROOT.glob("examples/*/pyproject.toml"))]
    return frozenset(_name(f) for f in files)


def distribution_of(provider: str | None) -> str:
    """The distribution in a record's ``provider`` ("onemodel-ops-nn 0.1.0" -> its name)."""
    return (provider or "?").split(" ")[0]


def is_project(provider: str | None) -> bool:
    """Whether a record (op, kernel...) comes from one of the project's own distributions."""
    return distribution_of(provider) in project_distributions()
