"""Reports: provenance, and rendering the notebooks to HTML pages (``membench report``).

* :mod:`.render`: what ``membench report`` calls: the runs opened and scored, every page planned
  and rendered, the Q2D and leaderboard pages; executing the notebooks (:mod:`.notebooks`),
  one page's HTML without code, with a summary, navigation, provenance and a
  Content-Security-Policy (:mod:`.export`), and the index (:mod:`.index`);
* :mod:`.pages`: the report's pages, one record each (notebook, titles, role);
* :mod:`.escape`: the one way a data string reaches HTML or Markdown;
* :mod:`.tables`, :mod:`.summary`: compact tables, gate badges, what to look at next;
  :mod:`.plots`: the notebooks' figures (matplotlib, imported lazily);
* :mod:`.browser_check`: the pages in headless Chromium (screenshot and DOM checks).
"""

from .provenance import provenance, provenance_frame

__all__ = ["provenance", "provenance_frame"]
