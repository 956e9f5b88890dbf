"""The markup grammar: where HTML, XHTML, SVG and CSS write URLs, rewritten byte for byte,
and the visible text of a document (no hooks: a library the plugins share).

`grammar` says which attributes and CSS constructs hold a URL and what kind of link each
is; `markup` scans tags without re-serialising anything; `rewrite` replaces the URLs it
is given and keeps every other byte; `text` is the words a reader sees; `snapshot` names
the records a browser rendering adds.  The `links` plugin finds a crawl's links with it,
the `mirror` export and the `replay` server rewrite pages with it, and the `index` plugin
reads the visible text through it.
"""
