"""The pass tests' helpers: `onemodel.testing.passes` (public, so plugins' pass tests use it)."""
from onemodel.testing.passes import apply, assert_same, const, counts, ops, traced

__all__ = ["apply", "traced", "const", "assert_same", "counts", "ops"]
