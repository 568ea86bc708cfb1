"""Bridges to other systems, each importing its library only when used (``onemodel[ray]``)."""
