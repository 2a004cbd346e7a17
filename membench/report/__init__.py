"""Reports: provenance, and rendering the notebooks to HTML pages (``membench report``).

* :mod:`.render`: execute the notebooks, export pages without code, with a summary, navigation,
  provenance and a Content-Security-Policy; the index;
* :mod:`.escape`: the one way a data string reaches HTML or Markdown;
* :mod:`.tables`, :mod:`.summary`: compact tables, gate badges, what to look at next;
* :mod:`.browser_check`: the pages in headless Chromium (screenshot and DOM checks).
"""

from .provenance import provenance, provenance_frame

__all__ = ["provenance", "provenance_frame"]
