"""Rewrite the operator table in docs/guide/tracing.md from the registry (`make docs`).

The table lists the project's own ops and kernels (the distributions under plugins/ and
examples/, and the core): a third-party plugin installed next to them changes nothing here."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from onemodel.cli.cmd_ops import ops_markdown  # noqa: E402
from tests.project_plugins import project_distributions  # noqa: E402

START, END = "<!-- ops-table:start -->", "<!-- ops-table:end -->"
DOC = ROOT / "docs" / "guide" / "tracing.md"


def render(text: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    table = ops_markdown(plugins=project_distributions())
    return pattern.sub(lambda _m: f"{START}\n{table}\n{END}", text)


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text()))
    sys.exit(0)
