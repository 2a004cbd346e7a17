"""URLs that data names, in a report: text by default, a live link only when asked and allowed;
and :func:`esc`, the one HTML escape (of reports, of the modalities' region renderers, of the
failure browser).

Set files and run files can come from someone else, so a URL in them (a video's ``meta.url``
in ``items.jsonl``, say) is shown as text, never made a link, unless the report was asked for
live links (``membench report --live-links``, recorded in each page's provenance) and the URL
is ``https`` to a host that the corpus manifest's source entries name
(:func:`manifest_link_hosts`: the host of each entry's ``url``). The page's
Content-Security-Policy loads nothing from any host either way (``default-src 'none'``);
:mod:`membench.report.escape` re-exports these for the report code. Touches nothing.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def manifest_link_hosts(manifest: str | Path) -> frozenset[str]:
    """The hosts a report may link to when asked for live links: the host of every ``https``
    URL in the ``url`` field of the corpus manifest's source entries (lower case)."""
    from .jsonl import iter_json_lines

    hosts = set()
    for _, row in iter_json_lines(Path(manifest)):
        u = row.get("url") if isinstance(row, dict) else None
        host = https_host(u) if isinstance(u, str) else None
        if host:
            hosts.add(host)
    return frozenset(hosts)


def https_host(url: str) -> str | None:
    """The host (lower case) of an ``https`` URL with no user, no password, no port but 443,
    no white space, control character or backslash (which browsers read as ``/``, so the
    host they see could differ from this parse); else None."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c == "\\" for c in url):
        return None
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError:
        return None
    if (
        u.scheme != "https"
        or not u.hostname
        or u.username is not None
        or u.password is not None
        or port not in (None, 443)
    ):
        return None
    return u.hostname.lower().rstrip(".")


def esc(value: Any) -> str:
    """``value`` as HTML text, safe in element content and in quoted attribute values
    (``& < > " '`` become entities; None is empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def external(url: Any, text: str | None = None, hosts: frozenset[str] | None = None) -> str:
    """A URL that data names, as HTML: ``text`` (default: the URL itself) as escaped text,
    followed by the URL when they differ; a live link (``rel="noopener noreferrer"``, a new
    tab) only when ``hosts`` is given (the report's live-link option) and the URL is ``https``
    to one of them."""
    s = "" if url is None else str(url)
    label = s if text is None else text
    host = https_host(s) if hosts else None
    if host is not None and host in hosts:
        return (
            f'<a href="{esc(s)}" rel="noopener noreferrer nofollow" target="_blank" '
            f'class="mb-ext">{esc(label)}</a>'
        )
    shown = esc(label) if label == s else f"{esc(label)}: {esc(s)}"
    return f'<span class="mb-url" title="a link from data, shown as text">{shown}</span>'


__all__ = ["esc", "external", "https_host", "manifest_link_hosts"]
