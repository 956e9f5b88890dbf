"""Replay: the web application that serves archived responses and the pages around them
(no hooks: a library the plugins share).

`app.make_app` builds the aiohttp application over a `library.Library` of archives: the
replay of archived responses under ``/replay/`` (rewritten by `replay`), the browse,
history, changes and status pages, and the pages other plugins add through the
``register_routes`` hook (the search page of `web`, the report of `qa`).  ``archiver
serve`` (the `web` plugin) runs it for the user; ``archiver qa`` runs it to load each
archived page in a browser.
"""
