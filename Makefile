# Two commands do everything (see README):
#   make all    set up .venv, check the corpus mirror, build + validate the sets
#   make test   set up .venv (if needed) and run the test suite
# The corpus root defaults to ../shared/corpus; override with MEMBENCH_CORPUS=/path.

PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
SETS    ?= bench/sets

.PHONY: all setup sets test clean

all: sets

$(BIN)/membench: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	@touch $@

setup: $(BIN)/membench

sets: setup
	$(BIN)/membench corpus check
	$(BIN)/membench build --out $(SETS)
	$(BIN)/membench validate --sets $(SETS)

test: setup
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) $(SETS) reports/*/
