"""Rewrite the operator table in docs/guide/tracing.md from the registry (`make docs`)."""
import pathlib
import re
import sys

from onemodel.cli.cmd_ops import ops_markdown

START, END = "<!-- ops-table:start -->", "<!-- ops-table:end -->"
DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide" / "tracing.md"


def render(text: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    return pattern.sub(lambda _m: f"{START}\n{ops_markdown()}\n{END}", text)


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text()))
    sys.exit(0)
