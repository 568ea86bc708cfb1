"""Entry point (fills in with its issue)."""
