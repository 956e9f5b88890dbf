"""Bundled plugin warc."""
