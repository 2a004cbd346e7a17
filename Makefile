# Two commands do everything (see README):
#   make all    set up .venv; check the corpus mirror; build + validate the sets; run the
#               reference systems on dev; score them; render the HTML reports (reports/index.html)
#   make test   set up .venv (if needed) and run the test suite (what CI runs)
# and, for any choice of systems or a quick look:
#   make all SYSTEMS=hybrid     one system (any of bm25 dense hybrid, or several)
#   make all LIMIT=50           50 queries per modality, into runs/<system>-dev-limit50
#   make report                 re-render the reports of the runs that exist (runs nothing)
#   make help                   what each target does and how long its cold path takes
# The corpus root defaults to ../shared/corpus; override with CORPUS=/path (or
# MEMBENCH_CORPUS=/path). Every step prints progress (MEMBENCH_QUIET=1 for none).

PY       ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
MEMBENCH_QUIET ?=
# this checkout's code, whatever the venv has installed
MB       := $(BIN)/python -m membench$(if $(MEMBENCH_QUIET), --quiet,)
SETS     ?= bench/sets
RUNS     ?= runs
REPORTS  ?= reports
SYSTEMS  ?= bm25 dense hybrid
LIMIT    ?=
CORPUS   ?=
MANIFEST ?= bench/corpus/manifest.jsonl
LOCK     ?= bench/sets.lock.json
# OCR in 2 worker processes (the output does not depend on it)
RUNCONFIG ?= --config ocr_processes=2

CORPUSFLAG := $(if $(CORPUS),--corpus $(CORPUS),)
SUFFIX     := $(if $(LIMIT),-limit$(LIMIT),)
LIMITFLAG  := $(if $(LIMIT),--limit $(LIMIT),)
RUNDIRS    := $(foreach s,$(SYSTEMS),$(RUNS)/$(s)-dev$(SUFFIX))
# the leaderboard's result store over the runs of this call (made anew each time)
BOARD      := $(RUNS)/leaderboard-dev$(SUFFIX)

.PHONY: all help setup sets runs reports report test fuzz clean

all: reports

help:
	@echo "make all       sets, then runs, then reports (below). Cold, on a busy 2-core machine:"
	@echo "               77 min measured (build 7.4, bm25 ingest 37.5 with OCR and PDF text, dense"
	@echo "               ingest 26.4 with embeddings); with warm caches (\$$MEMBENCH_CACHE or"
	@echo "               ~/.cache/membench) 8.7 min measured on a busy machine, 3 min of it reports."
	@echo "make sets      corpus check + build + validate -> $(SETS). Cold ~7 min (PDF reads), warm ~15 s."
	@echo "make runs      run $(SYSTEMS) on dev$(if $(LIMIT), ($(LIMIT) queries per modality),) -> $(RUNDIRS)."
	@echo "               Cold (measured): bm25 37.5 min (OCR, PDF text), dense 26.4 min (embeddings),"
	@echo "               hybrid then reads both caches; warm: about 1 min each. Runs resume."
	@echo "make reports   make runs, then render $(REPORTS)/ for those runs (about 1 min per run and"
	@echo "               1 min for the comparison); replaces the pages of these runs. Also the"
	@echo "               leaderboard: a result store of those runs ($(BOARD), about 40 s) and"
	@echo "               its page 06."
	@echo "make report    only render $(REPORTS)/ for the runs of SYSTEMS that exist (runs nothing)."
	@echo "make test      the test suite (what CI runs); make fuzz: the long fuzzing profile."
	@echo "Variables: SYSTEMS='bm25 dense hybrid' LIMIT=N CORPUS=DIR SETS=DIR RUNS=DIR REPORTS=DIR"

$(BIN)/membench: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	@touch $@

setup: $(BIN)/membench

sets: setup
	@echo "== sets: check the mirror, build $(SETS) and compare it with $(LOCK), validate."
	@echo "   Cold: about 7 min (PDF reads, cached after); warm: about 15 s."
	$(MB) corpus check $(CORPUSFLAG) --manifest $(MANIFEST)
	$(MB) build $(CORPUSFLAG) --out $(SETS) --manifest $(MANIFEST) --lock $(LOCK)
	$(MB) validate --sets $(SETS) $(CORPUSFLAG) --manifest $(MANIFEST) --lock $(LOCK)

runs: sets
	@echo "== runs: $(SYSTEMS) on dev$(if $(LIMIT), with $(LIMIT) queries per modality,) -> $(RUNDIRS)"
	@echo "   Cold (measured): bm25 37.5 min (OCR of the images and screenshots, PDF text), dense"
	@echo "   26.4 min (embeddings), hybrid then reads both caches; warm: about 1 min each."
	@echo "   A run resumes where it stopped."
	@for s in $(SYSTEMS); do \
	  $(MB) run --system $$s --split dev --sets $(SETS) $(CORPUSFLAG) --out $(RUNS)/$$s-dev$(SUFFIX) $(LIMITFLAG) $(RUNCONFIG) --manifest $(MANIFEST) --lock $(LOCK) --metrics || exit 1; \
	done

reports: runs
	@echo "== reports: pages 01-04 for $(RUNDIRS)$(if $(word 2,$(RUNDIRS)), and 05 comparing them,), 06 the leaderboard ($(BOARD)) -> $(REPORTS)/index.html"
	@echo "   About 1 min per run, 1 min for the comparison, 1 min for the leaderboard."
	rm -rf $(BOARD)
	$(MB) leaderboard --runs $(RUNDIRS) --sets $(SETS) --out $(BOARD)
	$(MB) report $(foreach r,$(RUNDIRS),--run $(r)) --sets $(SETS) $(CORPUSFLAG) --out $(REPORTS) --leaderboard $(BOARD) --force

# the reports of the runs that exist, without running anything
report: setup
	@have="$(foreach r,$(RUNDIRS),$(if $(wildcard $(r)/run.jsonl),$(r),))"; \
	missing="$(foreach r,$(RUNDIRS),$(if $(wildcard $(r)/run.jsonl),,$(r)))"; \
	if [ -z "$$(echo $$have)" ]; then \
	  echo "make report: none of $(RUNDIRS) exists; make runs SYSTEMS='$(SYSTEMS)'$(if $(LIMIT), LIMIT=$(LIMIT),) first" >&2; exit 2; fi; \
	if [ -n "$$(echo $$missing)" ]; then echo "== report: not run, left out: $$missing"; fi; \
	echo "== report: pages for $$have and the leaderboard ($(BOARD)) -> $(REPORTS)/index.html (about 1 min per run)"; \
	rm -rf $(BOARD) && $(MB) leaderboard --runs $$have --sets $(SETS) --out $(BOARD) && \
	$(MB) report $$(for r in $$have; do printf -- '--run %s ' $$r; done) --sets $(SETS) $(CORPUSFLAG) --out $(REPORTS) --leaderboard $(BOARD) --force

test: setup
	$(BIN)/python -m pytest

# the long fuzzing profile: 10x the examples of the one in `make test` (docs/robustness.md)
fuzz: setup
	MEMBENCH_FUZZ=long $(BIN)/python -m pytest -q tests/test_fuzz_readers.py --hypothesis-show-statistics

clean:
	rm -rf $(VENV) $(SETS) $(RUNS) $(REPORTS)/*/ $(REPORTS)/index.html
