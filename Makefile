# Two commands do everything (see README):
#   make all    set up .venv; check the corpus mirror; build + validate the sets; run the
#               reference systems on dev; score them; render the HTML reports (reports/index.html)
#   make test   set up .venv (if needed) and run the test suite (what CI runs)
#   make test-fast   the tests not marked slow: the everyday check
# and, for any choice of systems or a quick look:
#   make all SYSTEMS=hybrid     one system (any registered one, doubles included, or several)
#   make all LIMIT=50           50 queries per modality, into runs/<system>-dev-limit50
#   make report                 re-render the reports of the runs that exist (runs nothing)
#   make memsys                 the real memory libraries (mem0, MemPalace, LlamaIndex) on dev
#   make help                   what each target does and how long it takes here, now
# The corpus root defaults to ../shared/corpus; override with CORPUS=/path (or
# MEMBENCH_CORPUS=/path). Every step prints progress (MEMBENCH_QUIET=1 for none); each target
# first prints what it costs on a quiet machine and at the load average now
# (membench/core/estimate.py), and make all ends with a table of what every step cost.

PY       ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
MEMBENCH_QUIET ?=
SETS     ?= bench/sets
RUNS     ?= runs
REPORTS  ?= reports
SYSTEMS  ?= bm25 dense hybrid
# the real memory libraries (optional extras, installed by make setup): `make memsys`
MEMSYS   ?= mem0 mempalace llamaindex llamaindex-bm25
LIMIT    ?=
CORPUS   ?=
MANIFEST ?= bench/corpus/manifest.jsonl
LOCK     ?= bench/sets.lock.json
# every step's time, for the table `make all` prints at the end (one file per make call)
ifndef TIMINGS
TIMINGS  := $(RUNS)/timings/make-$(shell date +%Y%m%d-%H%M%S-%N).jsonl
endif
# this checkout's code, whatever the venv has installed
MB       := MEMBENCH_TIMINGS=$(TIMINGS) $(BIN)/python -m membench$(if $(MEMBENCH_QUIET), --quiet,)
# what a target costs, quiet and at the load now (standard library only: runs before the venv)
ESTIMATE := $(PY) -m membench.core.estimate
# the shared content layer's settings, for whatever system runs (membench run --content; never
# a system's config): OCR in 2 worker processes (the output does not depend on it)
CONTENT  ?= --content ocr_processes=2
# more --config for every system run (a system's own parameters)
RUNCONFIG ?=
# more --config for the systems that embed (dense, hybrid), e.g. --config precision=fp32
DENSECONFIG ?=
# the registered test doubles: run and reported like any system, never ranked on the
# leaderboard (it takes systems with a model card that did not see the gold)
DOUBLES  := oracle leaky random newest oldest metadata stuffed nothing echo
# the baselines (registered doubles, seconds each: nothing, no memory; echo, question-word
# overlap over the memory, empty cartridge): make all runs them beside SYSTEMS;
# reports compare them, and the leaderboard shows them under the ranked rows, never ranked
BASELINES ?= nothing echo
# the content-free floors (registered doubles that read no content, seconds each: random, a
# seeded order; newest and oldest, observed_at alone): make all runs them beside SYSTEMS;
# page 02 shows their recall@10 beside every run's, the leaderboard shows them under the
# baselines, labelled "content-free floor", never ranked
FLOORS   ?= random newest oldest
# what runs beside SYSTEMS, and joins the leaderboard under its ranked rows
BESIDE   := $(BASELINES) $(FLOORS)

CORPUSFLAG := $(if $(CORPUS),--corpus $(CORPUS),)
SUFFIX     := $(if $(LIMIT),-limit$(LIMIT),)
LIMITFLAG  := $(if $(LIMIT),--limit $(LIMIT),)
RUNDIRS    := $(foreach s,$(SYSTEMS),$(RUNS)/$(s)-dev$(SUFFIX))
BASEDIRS   := $(foreach s,$(filter-out $(SYSTEMS),$(BESIDE)),$(RUNS)/$(s)-dev$(SUFFIX))
BOARDDIRS  := $(foreach s,$(filter-out $(DOUBLES),$(SYSTEMS)),$(RUNS)/$(s)-dev$(SUFFIX))
# ... and the baselines' and floors' rows beside them (a board of those alone is not made)
BASEBOARD  := $(foreach s,$(filter $(BESIDE),$(SYSTEMS)),$(RUNS)/$(s)-dev$(SUFFIX)) $(BASEDIRS)
# a question's vector read from the embedding cache when an earlier run computed it, its latency
# the seconds computing it took (stored with it): hybrid reads dense's, a warm run embeds none
# (docs/speed.md "The warm path"; QUESTIONCACHE= embeds every question again)
QUESTIONCACHE ?= --config query_cache=true
# dense's own keys (QUESTIONCACHE, DENSECONFIG) for the systems that embed with it
DENSEFOR    = $$(case $$s in dense|dense-*|hybrid|hybrid-*) echo "$(QUESTIONCACHE) $(DENSECONFIG)";; esac)
# dense first: its ingest embeds while the OCR workers run; then bm25 and hybrid read the
# caches, RUNJOBS of them side by side (default: the CPUs, at most 2)
RUNORDER   := $(filter dense,$(SYSTEMS)) $(filter-out dense,$(SYSTEMS))
RUNJOBS    ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 2 ] && n=2; echo $$n)
# the leaderboard's result store over the runs of this call (made anew each time)
BOARD      := $(RUNS)/leaderboard-dev$(SUFFIX)

.PHONY: all plan help setup sets runs memsys reports report lint test test-fast fuzz clean bench-cold

all: plan reports
	@echo "== what each step of this make all cost (from $(TIMINGS)):"
	@$(BIN)/python -m membench.core.steptimes $(TIMINGS) --finish

# before anything else: what make all will cost here, now; the start of the step table's wall time
plan:
	@echo "== make all: setup (first time), sets, runs of $(SYSTEMS), leaderboard, reports."
	@mkdir -p $(dir $(TIMINGS))
	@$(ESTIMATE) all --systems "$(SYSTEMS)" --timings $(TIMINGS) $(if $(wildcard $(BIN)/membench),,--setup)

help:
	@echo "make all       setup (first time), sets, runs, then reports (below); what it costs:"
	@$(ESTIMATE) all --systems "$(SYSTEMS)" $(if $(wildcard $(BIN)/membench),,--setup)
	@echo "make setup     the virtualenv $(VENV) with membench and its test extra (pip's progress shown)."
	@echo "make sets      corpus check + build + validate -> $(SETS). Cold: PDF reads, cached after."
	@$(ESTIMATE) sets
	@echo "make runs      run $(SYSTEMS) on dev$(if $(LIMIT), ($(LIMIT) queries per modality),) -> $(RUNDIRS)."
	@echo "               Cold: dense OCRs the images while embedding, then bm25 and hybrid read"
	@echo "               the caches. Then the baselines $(BASELINES) and the content-free"
	@echo "               floors $(FLOORS) (seconds each: the floor every figure is"
	@echo "               read against; the floors read no content). Runs resume."
	@$(ESTIMATE) runs --systems "$(SYSTEMS)"
	@echo "make reports   make runs, then render $(REPORTS)/ for those runs, two pages at a time;"
	@echo "               replaces the pages of these runs. Also the leaderboard: a result store"
	@echo "               of those runs ($(BOARD)) and its page 06."
	@$(ESTIMATE) reports
	@echo "make report    only render $(REPORTS)/ for the runs of SYSTEMS that exist (runs nothing)."
	@echo "make memsys    run the real memory libraries $(MEMSYS) on dev -> $(RUNS)/<name>-dev"
	@echo "               (opt-in: not part of make all). Measured per query on a busy 2-core machine:"
	@echo "               mempalace ~0.3 s, mem0 ~0.5 s, llamaindex ~0.15 s (p50, one store of the whole"
	@echo "               dev memory; less with --config stores=modality); ingest reads the embedding"
	@echo "               cache dense fills. Their complete runs join the comparison and the"
	@echo "               leaderboard of make all / make reports / make report."
	@echo "make test      ruff (make lint), then the test suite (what CI runs), its files TEST_WORKERS"
	@echo "               at a time (auto: one per CPU). Says first whether chromium is there."
	@$(ESTIMATE) test
	@echo "make test-fast the tests not marked slow (none that needs the full build of the corpus),"
	@echo "               for everyday work; make test before a merge."
	@$(ESTIMATE) test-fast
	@echo "               make fuzz: the long fuzzing profile."
	@echo "make bench-cold  the main job with a fresh empty cache, then warm; every step timed;"
	@echo "               ISA=avx2 on the AVX2 path of any x86-64 CPU, REPEATS=3 for medians"
	@echo "               (bench/bench_mainjob.py; make all prints its own step table at the end)."
	@echo "Variables: SYSTEMS='bm25 dense hybrid' (any registered system, doubles included) LIMIT=N"
	@echo "           CORPUS=DIR SETS=DIR RUNS=DIR REPORTS=DIR CONTENT='--content ocr_processes=2'"
	@echo "           RUNCONFIG='--config KEY=VALUE' (every system) DENSECONFIG (dense and hybrid)"
	@echo "           QUESTIONCACHE= (dense and hybrid embed every question again; by default a"
	@echo "           question's vector is read from the cache, its latency the seconds it took)"

$(BIN)/membench: pyproject.toml setup.py membench/run/_hitcheck.c membench/trec/_trecscan.c \
  membench/core/_cpuidmask.c
	@echo "== setup: $(VENV) with membench and its test extra."
	@$(ESTIMATE) setup
	@mkdir -p $(VENV)
	@$(PY) -m membench.core.install_progress --log $(VENV)/venv.log --timings $(TIMINGS) \
	  --label "python3 -m venv" -- $(PY) -m venv $(VENV)
	@$(PY) -m membench.core.install_progress --log $(VENV)/pip-upgrade.log --timings $(TIMINGS) \
	  --label "pip upgrade" -- $(BIN)/pip install --upgrade pip
	@$(PY) -m membench.core.install_progress --log $(VENV)/pip-install.log --timings $(TIMINGS) \
	  --label "pip install -e .[test]" -- $(BIN)/pip install -e ".[test]"
	@touch $@

setup: $(BIN)/membench

sets: setup
	@echo "== sets: check the mirror, build $(SETS) and compare it with $(LOCK), validate."
	@$(ESTIMATE) sets
	@mkdir -p $(dir $(TIMINGS))
	@$(MB) corpus check $(CORPUSFLAG) --manifest $(MANIFEST)
	@$(MB) build $(CORPUSFLAG) --out $(SETS) --manifest $(MANIFEST) --lock $(LOCK) --brief
	@$(MB) validate --sets $(SETS) $(CORPUSFLAG) --manifest $(MANIFEST) --lock $(LOCK)

runs: sets
	@echo "== runs: $(SYSTEMS) on dev$(if $(LIMIT), with $(LIMIT) queries per modality,) -> $(RUNDIRS)"
	@echo "   Dense OCRs the images and screenshots while embedding; once it has ingested, its"
	@echo "   queries run beside bm25 and hybrid, which read the caches ($(RUNJOBS) at a time)."
	@$(ESTIMATE) runs --systems "$(SYSTEMS)"
	@echo "   A run resumes where it stopped. Each prints its gates; every figure: membench metrics RUN_DIR."
	@mkdir -p $(dir $(TIMINGS))
	@first=1; pids=""; n=0; flag=$(RUNS)/.ingested-$$$$; rm -f $$flag; \
	for s in $(RUNORDER); do \
	  if [ $$first = 1 ]; then \
	    $(MB) run --system $$s --split dev --sets $(SETS) $(CORPUSFLAG) --out $(RUNS)/$$s-dev$(SUFFIX) $(LIMITFLAG) $(CONTENT) $(RUNCONFIG) $(DENSEFOR) --manifest $(MANIFEST) --lock $(LOCK) --metrics --brief --ingested $$flag & \
	    fpid=$$!; while [ ! -e $$flag ] && kill -0 $$fpid 2>/dev/null; do sleep 1; done; \
	    if [ ! -e $$flag ]; then wait $$fpid || exit 1; else pids="$$fpid"; fi; rm -f $$flag; \
	    first=0; continue; fi; \
	  $(MB) run --system $$s --split dev --sets $(SETS) $(CORPUSFLAG) --out $(RUNS)/$$s-dev$(SUFFIX) $(LIMITFLAG) $(CONTENT) $(RUNCONFIG) $(DENSEFOR) --manifest $(MANIFEST) --lock $(LOCK) --metrics --brief & \
	  pids="$$pids $$!"; n=$$((n + 1)); \
	  if [ $$n -ge $(RUNJOBS) ]; then for p in $$pids; do wait $$p || { kill $$pids 2>/dev/null; exit 1; }; done; pids=""; n=0; fi; \
	done; \
	for p in $$pids; do wait $$p || { kill $$pids 2>/dev/null; exit 1; }; done
	@for s in $(filter-out $(SYSTEMS),$(BESIDE)); do \
	  case " $(FLOORS) " in *" $$s "*) echo "== the content-free floor $$s (seconds; random: a seeded order; newest, oldest: observed_at alone; reads no content)";; \
	  *) echo "== the baseline $$s (seconds; nothing: no memory; echo: question-word overlap over the memory, empty cartridge)";; esac; \
	  $(MB) run --system $$s --split dev --sets $(SETS) $(CORPUSFLAG) --out $(RUNS)/$$s-dev$(SUFFIX) $(LIMITFLAG) $(CONTENT) --manifest $(MANIFEST) --lock $(LOCK) --metrics --brief || exit 1; \
	done

memsys: sets
	@echo "== memsys: the real memory libraries $(MEMSYS) on dev$(if $(LIMIT), with $(LIMIT) queries per modality,) -> $(foreach s,$(MEMSYS),$(RUNS)/$(s)-dev$(SUFFIX))"
	@echo "   Opt-in (not part of make all): slower than the reference systems per query. A run resumes."
	@for s in $(MEMSYS); do \
	  $(MB) run --system $$s --split dev --sets $(SETS) $(CORPUSFLAG) --out $(RUNS)/$$s-dev$(SUFFIX) $(LIMITFLAG) $(CONTENT) $(RUNCONFIG) --manifest $(MANIFEST) --lock $(LOCK) --metrics --brief || exit 1; \
	done

# complete dev runs of the real memory systems (make memsys) that are not in SYSTEMS: the reports
# compare them too and put them on the leaderboard (shell words, expanded in the recipe)
MEMSYSDONE = $$(for s in $(filter-out $(SYSTEMS),$(MEMSYS)); do d=$(RUNS)/$$s-dev$(SUFFIX); \
  grep -qs '"status": *"complete"' $$d/meta.json && echo $$d; done)

reports: runs
	@extra="$(MEMSYSDONE)"; \
	echo "== reports: pages 01-04 for $(RUNDIRS) $(BASEDIRS)$$(for r in $$extra; do printf ' %s' $$r; done)$(if $(word 2,$(RUNDIRS)), and 05 comparing them,), 06 the leaderboard ($(BOARD)) -> $(REPORTS)/index.html"; \
	if [ -n "$$extra" ]; then echo "   with the complete runs of make memsys: $$extra"; fi; \
	$(ESTIMATE) reports; \
	board="$(BOARDDIRS) $$extra"; lb=""; rm -rf $(BOARD); \
	if [ -n "$$(echo $$board)" ]; then \
	  $(MB) leaderboard --runs $$board $(BASEBOARD) --sets $(SETS) --out $(BOARD) --brief || exit 1; lb="--leaderboard $(BOARD)"; \
	else echo "   no leaderboard: test doubles only ($(DOUBLES) are never ranked on it)"; fi; \
	$(MB) report $(foreach r,$(RUNDIRS) $(BASEDIRS),--run $(r)) $$(for r in $$extra; do printf -- '--run %s ' $$r; done) --sets $(SETS) $(CORPUSFLAG) --out $(REPORTS) $$lb --force --brief

# the reports of the runs that exist, without running anything
report: setup
	@have="$(foreach r,$(RUNDIRS),$(if $(wildcard $(r)/run.jsonl),$(r),)) $(MEMSYSDONE)"; \
	missing="$(foreach r,$(RUNDIRS),$(if $(wildcard $(r)/run.jsonl),,$(r)))"; \
	if [ -z "$$(echo $$have)" ]; then \
	  echo "make report: none of $(RUNDIRS) exists; make runs SYSTEMS='$(SYSTEMS)'$(if $(LIMIT), LIMIT=$(LIMIT),) first" >&2; exit 2; fi; \
	if [ -n "$$(echo $$missing)" ]; then echo "== report: not run, left out: $$missing"; fi; \
	have="$$have $(foreach r,$(BASEDIRS),$(if $(wildcard $(r)/run.jsonl),$(r),))"; \
	echo "== report: pages for $$have and the leaderboard ($(BOARD)) -> $(REPORTS)/index.html"; \
	$(ESTIMATE) reports; \
	board=""; base=""; for r in $$have; do case "$$(basename $$r)" in $(foreach d,$(BESIDE),$(d)-dev*|)__none__) base="$$base $$r";; $(foreach d,$(DOUBLES),$(d)-dev*|)__none__) ;; *) board="$$board $$r";; esac; done; \
	lb=""; rm -rf $(BOARD); \
	if [ -n "$$(echo $$board)" ]; then \
	  $(MB) leaderboard --runs $$board $$base --sets $(SETS) --out $(BOARD) --brief || exit 1; lb="--leaderboard $(BOARD)"; fi; \
	$(MB) report $$(for r in $$have; do printf -- '--run %s ' $$r; done) --sets $(SETS) $(CORPUSFLAG) --out $(REPORTS) $$lb --force --brief

# the browser tests need Debian's chromium on PATH (.ci/run installs it): said before they are
# skipped. PYTEST_ARGS: e.g. make test PYTEST_ARGS="-k report" for some of the tests only.
# The test files run in parallel (pytest-xdist), TEST_WORKERS at a time (auto: one per CPU;
# 0: in this process); one file's tests stay in one worker, so a module's fixtures run once,
# and the session's full build of the corpus is made once for all (tests/once.py); the files
# go out the longest first (tests/conftest.py, from bench/results/testsuite.json).
CHROMIUM ?= $(shell command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null)
PYTEST_ARGS ?=
TEST_WORKERS ?= auto
XDIST    := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
# ruff with pyproject.toml's rule set; its pinned version (the test extra) formats alike anywhere
lint: setup
	@echo "== lint: ruff check and ruff format --check (pyproject.toml's rules)."
	@$(BIN)/ruff check --quiet . && $(BIN)/ruff format --check --quiet . \
	  || { echo "lint failed: .venv/bin/ruff format . && .venv/bin/ruff check --fix . mends most"; exit 1; }

test: setup lint
	@echo "== test: $(if $(PYTEST_ARGS),pytest $(PYTEST_ARGS),the whole suite), TEST_WORKERS=$(TEST_WORKERS) at a time."
	@$(if $(PYTEST_ARGS),,$(ESTIMATE) test)
	@$(if $(CHROMIUM),echo "   browser tests: chromium found ($(CHROMIUM)).",\
	  echo "   browser tests: SKIPPED, chromium is not installed (apt-get install chromium; .ci/run"; \
	  echo "   does it): no report page is opened in a real browser, JupyterLab is not clicked.")
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# everyday work: the suite less the tests marked slow (pyproject.toml's marker; tests/conftest.py
# marks every test that reads the full build of the corpus); make test before a merge
test-fast: setup lint
	@echo "== test-fast: the tests not marked slow$(if $(PYTEST_ARGS), (pytest $(PYTEST_ARGS)),), TEST_WORKERS=$(TEST_WORKERS) at a time."
	@$(if $(PYTEST_ARGS),,$(ESTIMATE) test-fast)
	$(BIN)/python -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

# the long fuzzing profile: 10x the examples of the one in `make test` (docs/robustness.md)
fuzz: setup
	MEMBENCH_FUZZ=long $(BIN)/python -m pytest -q tests/test_fuzz_readers.py tests/test_fuzz_http.py tests/test_fuzz_content.py --hypothesis-show-statistics

# the main job cold (fresh empty cache) then warm, every step timed (bench/bench_mainjob.py);
# ISA=avx2: on the AVX2 path (python -m membench.core.isa avx2), REPEATS=3: three of each
ISA      ?=
REPEATS  ?= 1
bench-cold: setup
	$(BIN)/python bench/bench_mainjob.py $(if $(ISA),--isa $(ISA),) --repeats $(REPEATS)

clean:
	rm -rf $(VENV) $(SETS) $(RUNS) $(REPORTS)/*/ $(REPORTS)/index.html
