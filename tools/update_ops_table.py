"""Rewrite the operator tables from the registry (`make docs`): the op table in
docs/guide/tracing.md and the torch-name table in docs/guide/pytorch.md.

The tables list the project's own ops and kernels (the distributions under plugins/ and
examples/, and the core): a third-party plugin installed next to them changes nothing here."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from onemodel import registry  # noqa: E402
from onemodel.cli._table import render as render_table  # noqa: E402
from onemodel.cli.cmd_ops import ops_markdown  # noqa: E402
from tests.project_plugins import is_project, project_distributions  # noqa: E402

START, END = "<!-- ops-table:start -->", "<!-- ops-table:end -->"
TORCH_START, TORCH_END = "<!-- torch-table:start -->", "<!-- torch-table:end -->"
DOC = ROOT / "docs" / "guide" / "tracing.md"
TORCH_DOC = ROOT / "docs" / "guide" / "pytorch.md"


def _replace(text: str, start: str, end: str, table: str) -> str:
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _m: f"{start}\n{table}\n{end}", text)


def render(text: str) -> str:
    return _replace(text, START, END, ops_markdown(plugins=project_distributions()))


def torch_table() -> str:
    """One row per torch name (`OpDef.torch`) with the project's op(s) for it, then the ops
    torch has no counterpart for."""
    by_torch, without = {}, []
    for name, op in sorted(registry.ops().items()):
        if not is_project(op.provider):
            continue
        if op.torch is None:
            without.append(name)
        for torch_name in op.torch or ():
            by_torch.setdefault(torch_name, []).append(name)
    rows = [[f"`{t}`", ", ".join(f"`{n}`" for n in names)]
            for t, names in sorted(by_torch.items(), key=lambda kv: kv[0].lower())]
    table = render_table(["PyTorch", "om.ops"], rows, markdown=True)
    return table + "\n\nNo torch counterpart: " + ", ".join(f"`{n}`" for n in without) + "."


def render_torch(text: str) -> str:
    return _replace(text, TORCH_START, TORCH_END, torch_table())


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text()))
    TORCH_DOC.write_text(render_torch(TORCH_DOC.read_text()))
    sys.exit(0)
