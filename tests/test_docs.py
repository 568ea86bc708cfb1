"""Every ```python block of README.md and docs/**/*.md runs: the blocks of one file run in order, in one
namespace, in a fresh temporary working directory.

Only fences whose info string is exactly ``python`` run; write ```` ```python skip ```` (or use
another language) for code that must not run, such as PyTorch snippets.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.S | re.M)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(first line number, code) of each runnable block."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        if m.group("info").strip() != "python":
            continue
        indent = m.group("indent")
        lines = [ln[len(indent):] if ln.startswith(indent) else ln
                 for ln in m.group("body").splitlines()]
        line_no = text.count("\n", 0, m.start("body")) + 1
        blocks.append((line_no, "\n".join(lines) + "\n"))
    return blocks


README = DOCS.parent / "README.md"
DOC_FILES = sorted(p for p in [README, *DOCS.rglob("*.md")] if python_blocks(p))


def test_extractor_finds_blocks_and_skips_others(tmp_path):
    sample = tmp_path / "sample.md"
    sample.write_text("# t\n```python\nx = 1\n```\n```python skip\nboom()\n```\n```text\nno\n"
                      "```\n- item\n  ```python\n  y = x + 1\n  ```\n", encoding="utf-8")
    assert python_blocks(sample) == [(3, "x = 1\n"), (13, "y = x + 1\n")]


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(DOCS.parent)))
def test_doc_python_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs.{path.stem}"}
    rel = path.relative_to(DOCS.parent)
    for line_no, code in python_blocks(path):
        # blank lines in front keep the traceback's line numbers those of the .md file
        compiled = compile("\n" * (line_no - 1) + code, str(rel), "exec")
        try:
            exec(compiled, namespace)  # noqa: S102 - running the docs is the point
        except Exception as exc:
            raise AssertionError(f"{rel}: the python block at line {line_no} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
