"""Fetch's core: the composition root, the message path and everything it wires."""
