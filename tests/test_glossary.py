"""The glossary is linked where its words are used: every docs page that uses one of its
unambiguous words (holder, as_of, cartridge, atom) in prose links that word's entry, and every
link into the glossary names an entry that exists."""

from __future__ import annotations

import re

import pytest

from membench.core.paths import REPO_ROOT

DOCS = REPO_ROOT / "docs"
GLOSSARY = DOCS / "glossary.md"
#: words that mean only the glossary's sense wherever the docs use them in prose
UNAMBIGUOUS = {
    "holder": r"\bholders?\b",
    "as_of": r"\bas_of\b",
    "cartridge": r"\bcartridges?\b",
    "atom": r"\batoms?\b",
}


def entries() -> set[str]:
    return set(re.findall(r"^## (\S+)$", GLOSSARY.read_text(), re.M))


def prose(text: str) -> str:
    """The page without fenced code, generated blocks, headings, tables and inline code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = re.sub(r"<!-- (\S+):start.*?<!-- \1:end -->", "", text, flags=re.S)
    lines = [ln for ln in text.split("\n") if not ln.startswith(("#", "|"))]
    return re.sub(r"`[^`]*`", "", "\n".join(lines))


PAGES = sorted(p for p in DOCS.glob("*.md") if p != GLOSSARY)


def test_the_glossary_has_its_entries():
    assert {
        "holder",
        "as_of",
        "atom",
        "extent",
        "cartridge",
        "tell",
        "native",
        "audited",
        "door",
        "shelf",
    } <= entries()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_links_the_glossary_words_it_uses(page):
    text = page.read_text()
    missing = [
        word
        for word, rx in UNAMBIGUOUS.items()
        if re.search(rx, re.sub(r"\[[^\]]*\]\([^)]*\)", "", prose(text)), re.I)
        and f"glossary.md#{word}" not in text
    ]
    assert not missing, f"{page.name} uses {missing} without a link to docs/glossary.md"


@pytest.mark.parametrize("page", [*PAGES, REPO_ROOT / "README.md"], ids=lambda p: p.name)
def test_links_into_the_glossary_name_an_entry(page):
    anchors = set(re.findall(r"glossary\.md#([\w-]+)", page.read_text()))
    assert anchors <= entries(), f"{page.name}: no glossary entry {sorted(anchors - entries())}"


def test_the_check_can_fail():
    assert re.search(UNAMBIGUOUS["holder"], prose("A holder's memory.\n`holder`\n"))
    assert not re.search(UNAMBIGUOUS["holder"], prose("```\nholder\n```\n`holder`\n# holder\n"))
