"""Bundled plugins, registered through the `archiver` entry-point group like any other."""
