"""Entry point of this plugin."""
