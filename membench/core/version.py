"""membench's version (``membench.__version__``; pyproject.toml says the same): kept in the
lowest room so that every floor may name it. Touches nothing."""

__version__ = "0.1.0"
