"""Bundled plugin index."""
