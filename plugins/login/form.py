"""The login form of a page, read as a browser reads it, and the fields it would send.

As Scrapy's ``FormRequest.from_response``: the form is the one holding a password field;
every field it already fills (the hidden CSRF token, a "remember me" default, the first
submit button's name) goes with the login and the password put in their fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode

_TEXT_TYPES = ("", "text", "email", "tel")
_UNSENT = ("button", "file", "image", "reset")


@dataclass(frozen=True)
class LoginForm:
    action: str
    """Where the form is sent, absolute."""
    method: str
    fields: list[tuple[str, str]]
    """The fields it sends, in order, the login and password not yet in."""
    user_field: str
    password_field: str


def _type(node: LexborNode) -> str:
    return (node.attributes.get("type") or "").strip().lower()


def login_form(html: str, page_url: str, user_field: str = "", password_field: str = "") -> LoginForm | None:
    """The page's login form, or None when it has none (no form with a password field)."""
    tree = LexborHTMLParser(html)
    for form in tree.css("form"):
        inputs = form.css("input, select, textarea, button")
        passwords = [
            n for n in inputs if n.tag == "input" and _type(n) == "password" and n.attributes.get("name")
        ]
        if not passwords:
            continue
        password = password_field or str(passwords[0].attributes.get("name"))
        fields: list[tuple[str, str]] = []
        user = user_field
        submitted = False
        for node in inputs:
            name = node.attributes.get("name")
            kind = _type(node)
            if not name or "disabled" in node.attributes:
                continue
            if node.tag == "button" or kind == "submit":
                if not submitted and kind in ("", "submit"):
                    submitted = True
                    fields.append((name, node.attributes.get("value") or ""))
                continue
            if node.tag == "input" and kind in _UNSENT:
                continue
            unchecked = "checked" not in node.attributes
            if node.tag == "input" and kind in ("checkbox", "radio") and unchecked:
                continue
            if not user and node.tag == "input" and kind in _TEXT_TYPES and name != password:
                user = name
            if name in (user, password):
                continue
            if node.tag == "select":
                chosen = node.css_first("option[selected]") or node.css_first("option")
                value = "" if chosen is None else chosen.attributes.get("value") or chosen.text()
            elif node.tag == "textarea":
                value = node.text()
            else:
                value = node.attributes.get("value") or ("on" if kind in ("checkbox", "radio") else "")
            fields.append((name, value or ""))
        action = urljoin(page_url, form.attributes.get("action") or page_url)
        method = (form.attributes.get("method") or "get").strip().upper()
        return LoginForm(action, method, fields, user, password)
    return None
