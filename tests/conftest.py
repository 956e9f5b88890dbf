"""The fixtures (`site`, `other_site`, `crawl_archive`) come from `archiver.testing`, a pytest plugin."""
