"""Bundled plugin mirror."""
