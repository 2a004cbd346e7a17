# Two commands do everything (see README):
#   make all    set up .venv; check the corpus mirror; build + validate the sets; run the
#               reference systems on dev; score them; render the HTML reports (reports/index.html)
#   make test   set up .venv (if needed) and run the test suite (what CI runs)
# The corpus root defaults to ../shared/corpus; override with MEMBENCH_CORPUS=/path.

PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
SETS    ?= bench/sets
RUNS    ?= runs
REPORTS ?= reports
SYSTEMS ?= bm25 dense hybrid
# e.g. `make all LIMIT=50` for a quick pass (50 queries per modality)
LIMIT   ?=
LIMITFLAG := $(if $(LIMIT),--limit $(LIMIT),)
# OCR in 2 worker processes (the output does not depend on it)
RUNCONFIG ?= --config ocr_processes=2

.PHONY: all setup sets runs reports test fuzz clean

all: reports

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

runs: sets
	@for s in $(SYSTEMS); do \
	  $(BIN)/membench run --system $$s --split dev --sets $(SETS) --out $(RUNS)/$$s-dev $(LIMITFLAG) $(RUNCONFIG) --metrics || exit 1; \
	done

reports: runs
	$(BIN)/membench report --run $(RUNS)/bm25-dev $(foreach s,$(filter-out bm25,$(SYSTEMS)),--compare $(RUNS)/$(s)-dev) --sets $(SETS) --out $(REPORTS)

test: setup
	$(BIN)/python -m pytest

# the long fuzzing profile: 10x the examples of the one in `make test` (docs/robustness.md)
fuzz: setup
	MEMBENCH_FUZZ=long $(BIN)/python -m pytest -q tests/test_fuzz_readers.py --hypothesis-show-statistics

clean:
	rm -rf $(VENV) $(SETS) $(RUNS) $(REPORTS)/*/ $(REPORTS)/index.html
