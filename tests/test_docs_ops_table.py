"""The operator table committed in docs/guide/tracing.md must equal the registry's."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_committed_ops_table_is_current():
    spec = importlib.util.spec_from_file_location("update_ops_table", ROOT / "tools" / "update_ops_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = mod.DOC.read_text()
    assert mod.render(text) == text, "the op table is stale: run `make docs` and commit docs/guide/tracing.md"


def test_committed_torch_table_is_current():
    spec = importlib.util.spec_from_file_location("update_ops_table", ROOT / "tools" / "update_ops_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = mod.TORCH_DOC.read_text()
    assert mod.TORCH_START in text
    assert mod.render_torch(text) == text, \
        "the torch-name table is stale: run `make docs` and commit docs/guide/pytorch.md"
