"""A cheap upper estimate of the work an HTML tree builder will do, to avoid its worst case.

The tree builder walks the stack of open elements for many tags (scope checks, unmatched
end tags), so its time grows with (number of tags) x (nesting depth): 100,000 nested
`<div>` take lexbor about 30 s.  Summing the estimated stack depth at each tag costs one
regular-expression pass and a few list operations per tag, and tells such a document
apart before it is given to the parser.
"""

from __future__ import annotations

import re

# Around 4 ns of lexbor time per unit: 10 million units is about 40 ms of parsing.
DEFAULT_WORK_BUDGET = 10_000_000

_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")

_VOID = frozenset(
    [
        *("area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image"),
        *("img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr"),
    ]
)

# Start tags that close an open element (`<li>a<li>b`, `<tr><td>a<tr>`, `<p>a<div>`):
# name -> (what it closes, where the search for it stops).  The search looks at most
# `_LOOKBACK` elements down the stack, which keeps the estimate linear.
_LOOKBACK = 16
_BUTTON_SCOPE = frozenset({"button", "table", "td", "th", "caption", "object", "marquee", "template"})
_LIST_SCOPE = frozenset({"ul", "ol", "menu", "dl", "table", "td", "th", "button"})
_CLOSES_P = ({"p"}, _BUTTON_SCOPE)
_IMPLIED_END: dict[str, tuple[set[str], frozenset[str]]] = {
    "li": ({"li"}, _LIST_SCOPE),
    "dt": ({"dt", "dd"}, _LIST_SCOPE),
    "dd": ({"dt", "dd"}, _LIST_SCOPE),
    "tr": ({"tr"}, frozenset({"table"})),
    "td": ({"td", "th"}, frozenset({"table", "tr"})),
    "th": ({"td", "th"}, frozenset({"table", "tr"})),
    "thead": ({"thead", "tbody", "tfoot"}, frozenset({"table"})),
    "tbody": ({"thead", "tbody", "tfoot"}, frozenset({"table"})),
    "tfoot": ({"thead", "tbody", "tfoot"}, frozenset({"table"})),
    "option": ({"option"}, frozenset({"select", "datalist"})),
    "optgroup": ({"option", "optgroup"}, frozenset({"select"})),
    **dict.fromkeys(
        [
            *("address", "article", "aside", "blockquote", "center", "details", "dialog", "dir"),
            *("div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3"),
            *("h4", "h5", "h6", "header", "hgroup", "main", "menu", "nav", "ol", "p", "pre"),
            *("section", "summary", "table", "ul"),
        ],
        _CLOSES_P,
    ),
}


def _close_implied(
    stack: list[str], open_counts: dict[str, int], names: set[str], stops: frozenset[str]
) -> None:
    """Pop the nearest open element named in `names`, unless a `stops` element comes first."""
    if not any(open_counts.get(name) for name in names):
        return
    for index in range(len(stack) - 1, max(-1, len(stack) - 1 - _LOOKBACK), -1):
        name = stack[index]
        if name in names:
            for popped in stack[index:]:
                open_counts[popped] -= 1
            del stack[index:]
            return
        if name in stops:
            return


def exceeds_budget(text: str, budget: int = DEFAULT_WORK_BUDGET) -> bool:
    """True when parsing `text` as HTML may cost more than `budget` stack-walk steps."""
    tags = text.count("<")
    if tags * tags // 2 <= budget:
        return False  # even if every tag nested, the work would stay under budget
    stack: list[str] = []
    open_counts: dict[str, int] = {}
    work = 0
    for closing, raw_name in _TAG.findall(text):
        name = raw_name.lower()
        if closing:
            if open_counts.get(name):
                while True:
                    top = stack.pop()
                    open_counts[top] -= 1
                    if top == name:
                        break
            else:
                work += len(stack)  # an unmatched end tag walks the whole stack
        elif name not in _VOID:
            implied = _IMPLIED_END.get(name)
            if implied is not None:
                _close_implied(stack, open_counts, *implied)
            stack.append(name)
            open_counts[name] = open_counts.get(name, 0) + 1
            work += len(stack)
        else:
            continue
        if work > budget:
            return True
    return False
