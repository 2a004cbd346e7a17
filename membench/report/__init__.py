"""Reports: provenance, and rendering the notebooks to HTML (``membench report``)."""

from .provenance import provenance, provenance_frame

__all__ = ["provenance", "provenance_frame"]
