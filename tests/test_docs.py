"""Every ```python block of README.md and docs/**/*.md runs: the blocks of one file run in order, in one
namespace, in a fresh temporary working directory.

Only fences whose info string is exactly ``python`` run; write ```` ```python skip ```` (or use
another language) for code that must not run, such as PyTorch snippets.
"""
from __future__ import annotations

import re
import sys
import types
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
    # the blocks run in a module that can be imported by name while they run, so a function
    # they define pickles by reference (a process pool's worker function, in a forked worker)
    module = types.ModuleType(f"docs.{path.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    rel = path.relative_to(DOCS.parent)
    for line_no, code in python_blocks(path):
        # blank lines in front keep the traceback's line numbers those of the .md file
        compiled = compile("\n" * (line_no - 1) + code, str(rel), "exec")
        try:
            exec(compiled, namespace)  # noqa: S102 - running the docs is the point
        except Exception as exc:
            raise AssertionError(f"{rel}: the python block at line {line_no} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc


# -- links ----------------------------------------------------------------------------------------
ROOT = DOCS.parent
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\((?P<target><[^>]+>|[^)\s]+)(?:\s+\"[^\"]*\")?\)")
ALL_MD = sorted([README, *DOCS.rglob("*.md")])


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of each Markdown link outside code blocks and inline code."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"))
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        line = re.sub(r"`[^`]*`", "", line)
        out += [(no, m.group("target").strip("<>")) for m in LINK.finditer(line)]
    return out


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+\s+(.*)$", text, re.M)}


def test_link_extractor(tmp_path):
    sample = tmp_path / "s.md"
    sample.write_text("[a](x.md) and ![img](i.png) `[no](code.md)`\n```text\n[no](fence.md)\n```\n"
                      "[b](<y z.md>) [c](https://e.org) [d](#top)\n", encoding="utf-8")
    assert links(sample) == [(1, "x.md"), (5, "y z.md"), (5, "https://e.org"), (5, "#top")]


@pytest.mark.parametrize("path", ALL_MD, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(path):
    bad = []
    for no, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        rel = f"{path.relative_to(ROOT)}:{no}: {target}"
        if ROOT.resolve() not in dest.parents and dest != ROOT.resolve():
            bad.append(f"{rel} (outside the repository)")
        elif not dest.exists():
            bad.append(f"{rel} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{rel} (no heading #{anchor})")
    text = re.sub(r"`[^`]*`", "", FENCE.sub("", path.read_text(encoding="utf-8")))  # prose only
    for m in re.finditer(r"(?<![\w/.])(?:\.\./)+[\w.-][\w./-]*", text):  # a path in prose
        dest = (path.parent / m.group(0)).resolve()
        if ROOT.resolve() not in dest.parents and dest != ROOT.resolve():
            bad.append(f"{path.relative_to(ROOT)}: {m.group(0)} (outside the repository)")
        elif not dest.exists():
            bad.append(f"{path.relative_to(ROOT)}: {m.group(0)} (no such file)")
    assert not bad, "\n".join(bad)


def test_every_markdown_file_with_python_is_executed():
    """Each file with a ```python block is in the run list (a file cannot be skipped by
    accident), and README.md is among them."""
    with_code = {p for p in ALL_MD if python_blocks(p)}
    assert with_code == set(DOC_FILES) and README in with_code


# -- the README's next step after `make demo` -----------------------------------------------------
def test_readme_commands_after_make_demo_work_as_written(tmp_path):
    """The README's shell commands, run from a folder holding what `make demo` leaves, with the
    `onemodel` script of this environment as `.venv/bin/onemodel`; and `make demo` prints the
    first of them."""
    import os
    import shlex
    import subprocess
    import sys

    script = Path(sys.executable).parent / "onemodel"
    if not script.exists():
        pytest.skip("the onemodel script is not installed next to this Python (not a venv)")
    from onemodel import demo

    assert demo.main(["--epochs", "1", "--train-size", "200", "--test-size", "50", "--quiet",
                      "--out", str(tmp_path / "demo-output")]) == 0
    text = README.read_text(encoding="utf-8")
    commands = [ln.split(" #")[0].strip() for m in FENCE.finditer(text)
                if m.group("info").strip() == "sh" for ln in m.group("body").splitlines()
                if ln.startswith(".venv/bin/onemodel")]
    assert len(commands) >= 2
    for cmd in commands:
        argv = shlex.split(cmd)
        argv[0] = str(script)
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "COLUMNS": "80"})
        assert proc.returncode == 0, f"{cmd}: {proc.stderr}"
        assert "Warning" not in proc.stderr, f"{cmd}: {proc.stderr}"
        if argv[1] != "show":  # tables fit; a graph's lines are as long as its nodes
            assert max(map(len, proc.stdout.splitlines())) <= 80, cmd
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8").replace("$(VENV)", ".venv")
    assert f"@echo \"  {commands[0]}\"" in makefile
