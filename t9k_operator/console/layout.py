"""The console's HTML pages put together: each page's file (``pages/<name>.html``)
holds its own body, and this module adds the head every page shares (the
CSRF token's meta, the title, the stylesheets and scripts, all files: the
Content-Security-Policy allows no inline script or style), the breadcrumb
links (``{{nav}}`` in a page) and the confirmation dialog (``{{confirm}}``).

A page is put together once, when its routes are made; what is per request
(``{{csrf_token}}``) is replaced by the route.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from t9k_operator.console import assets

PAGES = Path(__file__).parent / "pages"

_HEAD = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
"""

_CONFIRM = """\
<dialog id="confirm" aria-labelledby="confirm-title">
  <form method="dialog">
    <h2 id="confirm-title">{title}</h2>
    <p id="confirm-text"></p>
    <div class="buttons">
      <button type="submit" value="cancel" autofocus>Cancel</button>
      <button type="submit" value="ok" id="confirm-ok">{ok}</button>
    </div>
  </form>
</dialog>"""


def page(
    name: str,
    title: str,
    *,
    styles: Sequence[str] = (),
    scripts: Sequence[str] = (),
    nav: Sequence[tuple[str, str]] = (),
    confirm: tuple[str, str] | None = None,
    csrf_meta: bool = True,
) -> str:
    """The page ``pages/<name>.html`` whole: titled ``<title> - t9k console``,
    with ``/static/console.css`` then ``/static/<style>.css`` of each of
    ``styles``, ``/static/<script>.js`` (deferred) of each of ``scripts``
    (built, :mod:`~t9k_operator.console.assets`), a
    ``{{csrf_token}}`` meta unless ``csrf_meta`` is false, the breadcrumb
    links ``nav`` (href, text) and the confirmation dialog ``confirm``
    (title, OK button's text)."""
    head = [_HEAD]
    if csrf_meta:
        head.append('<meta name="csrf-token" content="{{csrf_token}}">\n')
    head.append(f"<title>{title} - t9k console</title>\n")
    for style in ("console", *styles):
        head.append(f'<link rel="stylesheet" href="{assets.style(style)}">\n')
    for script in scripts:
        head.append(f'<script src="{assets.script(script)}" defer></script>\n')
    head.append("</head>\n<body>\n")
    body = (PAGES / f"{name}.html").read_text()
    if nav:
        links = " ".join(f'<a href="{href}">{text}</a>' for href, text in nav)
        body = body.replace("{{nav}}", f'<nav aria-label="Breadcrumb">{links}</nav>')
    if confirm is not None:
        body = body.replace("{{confirm}}", _CONFIRM.format(title=confirm[0], ok=confirm[1]))
    return "".join(head) + body + "</body>\n</html>\n"


def whoami(username: str | None) -> str:
    """The header's "Signed in as" of the in-cluster console's person (their
    name as the API server gave it, escaped: a name is the identity
    provider's text); nothing for ``t9k console``, whose user is the
    kubeconfig's."""
    if username is None:
        return ""
    name = html.escape(username or "a user the API server did not name", quote=True)
    return f'<p id="whoami">Signed in as <span class="user">{name}</span></p>'
