"""The backend tests' special-value check: `onemodel.testing.numerics` (public, for plugins)."""
from onemodel.testing.numerics import assert_specials_then_close

__all__ = ["assert_specials_then_close"]
