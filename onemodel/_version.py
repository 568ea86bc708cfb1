"""The version of OneModel (one place; the package, the formats and the CLI read it)."""
__version__ = "0.1.0"
