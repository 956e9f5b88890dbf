"""Benchmarks: a generated site, a web server to serve it, and a runner comparing crawlers.

`bench.sitegen` writes the site, `bench.server` serves it with nginx (optionally 50 ms per
response), `bench.run` crawls it with archiver, wget and Scrapy and prints the table.
"""
