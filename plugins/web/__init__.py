"""Bundled plugin web."""
