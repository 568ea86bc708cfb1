"""The session tests' models: `onemodel.testing.models` (public, so plugin tests use it too)."""
from onemodel.testing.models import *  # noqa: F401,F403
from onemodel.testing.models import __all__  # noqa: F401
