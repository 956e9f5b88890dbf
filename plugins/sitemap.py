"""Bundled plugin sitemap."""
