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
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "image",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
# Elements a repeated start tag closes (`<li>a<li>b`): counted once when they repeat directly.
_SELF_CLOSING = frozenset(
    [
        "p",
        "li",
        "dt",
        "dd",
        "option",
        "optgroup",
        "tr",
        "td",
        "th",
        "rb",
        "rt",
        "rp",
        "rtc",
        "thead",
        "tbody",
        "tfoot",
        "colgroup",
    ]
)


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
            if not (stack and stack[-1] == name and name in _SELF_CLOSING):
                stack.append(name)
                open_counts[name] = open_counts.get(name, 0) + 1
            work += len(stack)
        else:
            continue
        if work > budget:
            return True
    return False
