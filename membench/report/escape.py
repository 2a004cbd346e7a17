"""The one way a data string reaches a report: escaped for its context.

Reports show strings that other people wrote (system names, run directory names, questions,
answers, config values, coverage reasons, notes). Each goes through exactly one of:

* :func:`esc` for HTML text and attribute values (``& < > " '`` become entities;
  :func:`membench.core.links.esc`, which the modalities' region renderers use too);
* :func:`md` for Markdown that nbconvert turns into HTML: HTML-escaped first (Markdown keeps raw
  HTML, so ``<script>`` would otherwise survive), then every Markdown metacharacter is
  backslash-escaped, so a backtick cannot end a code span and ``[x](javascript:…)`` cannot
  become a link;
* :func:`href` for a link target: only a relative path inside the report tree (no scheme, no
  leading ``/``, no ``..``, no ``//``), each segment percent-encoded; anything else raises;
* :func:`external` for a URL that data names (a video's ``meta.url`` in ``items.jsonl``, ...):
  shown as text, never a link, unless the report was asked for live links
  (``membench report --live-links``) and the URL is ``https`` to a host the corpus manifest's
  source entries name (:func:`manifest_link_hosts`); set files can come from someone else.

:func:`markdown` is ``IPython.display.Markdown`` built from a template whose ``{}`` fields are
filled with :func:`md`-escaped values, and :func:`html_block` the same with :func:`esc`, so a
notebook never formats data into markup by hand. Touches nothing.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from ..core.links import esc, external, manifest_link_hosts

_MD_META = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def md(value: Any) -> str:
    """``value`` as literal text inside Markdown (rendered by nbconvert / JupyterLab): every
    Markdown metacharacter backslash-escaped, then ``& < >`` as entities (so raw HTML cannot
    pass), line breaks as spaces (a value cannot start a heading or a list)."""
    s = "" if value is None else str(value)
    s = _MD_META.sub(r"\\\1", s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return s.replace("\r", " ").replace("\n", " ")


class UnsafeLink(ValueError):
    """A link target that is not a relative path inside the report tree."""


def href(path: str) -> str:
    """A link target for a page of the report tree: relative, no ``..``, percent-encoded.

    Raises :class:`UnsafeLink` for anything else (``javascript:``, ``data:``, ``//host``,
    absolute paths, parent directories)."""
    p = str(path)
    if not p or p.startswith(("/", "\\")) or "\\" in p or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", p):
        raise UnsafeLink(f"link {p!r}: only relative paths inside the report are linked")
    parts = p.split("/")
    if any(seg in ("", ".", "..") for seg in parts[:-1]) or parts[-1] in ("", ".", ".."):
        raise UnsafeLink(f"link {p!r}: only relative paths inside the report are linked")
    return "/".join(quote(seg, safe="") for seg in parts)


def _fill(template: str, escape, args: tuple, kwargs: dict) -> str:
    return template.format(*(escape(a) for a in args), **{k: escape(v) for k, v in kwargs.items()})


def markdown(template: str, *args: Any, **kwargs: Any):
    """``IPython.display.Markdown(template.format(...))`` with every field :func:`md`-escaped.
    The template itself is the notebook's own text (trusted); only fields carry data."""
    from IPython.display import Markdown

    return Markdown(_fill(template, md, args, kwargs))


def html_block(template: str, *args: Any, **kwargs: Any):
    """``IPython.display.HTML(template.format(...))`` with every field :func:`esc`-escaped."""
    from IPython.display import HTML

    return HTML(_fill(template, esc, args, kwargs))


__all__ = [
    "UnsafeLink",
    "esc",
    "external",
    "href",
    "html_block",
    "manifest_link_hosts",
    "markdown",
    "md",
]
