"""Bundled plugin links."""
