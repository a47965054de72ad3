# tracetop: `make demo` and `make test` are all a newcomer needs.
# Both install what is missing: Debian packages (with apt-get, as root or
# through sudo) and a virtual environment in .venv with tracetop inside.

PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
# The C tests' build, one per virtual environment (each may be another Python's).
CBUILD := build/c$(patsubst .venv%,%,$(notdir $(VENV)))
APT_PACKAGES := gcc pkg-config libxxhash-dev libzstd-dev zstd libotf2-trace-dev otf2-tools chromium nodejs libncurses-dev tmux openmpi-bin libopenmpi-dev gdb
SOURCES := $(shell git ls-files -co --exclude-standard -- src tracetop tracetop-follow.pth _tracetop_compat.py meson.build meson.options pyproject.toml 2>/dev/null)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-all-pythons test-c test-python bench fuzz oracle lint format sanitize deps clean

# Every build made here treats a warning as an error (meson.build leaves it off, so that a user's `pip install`
# still builds the day their compiler adds a warning). MESON_ARGS go to `meson setup` and to pip's build alike.
MESON_ARGS ?= -Dwerror=true

demo: $(VENV)/.installed
	rm -rf demo-experiment
	$(VENV)/bin/tracetop run --output demo-experiment examples/demo.py
	$(VENV)/bin/tracetop summary demo-experiment

test: test-c test-python

# `make test` on each of these Pythons, each in a virtual environment of its own (.venv-3.12, ...): found
# through pyenv where there is one, else as python3.12 ... on PATH. Every one is looked for before any test
# runs, so a missing one fails at once; each run's time is said, to keep CI within its time.
PYTHONS ?= 3.11 3.12 3.13
test-all-pythons:
	@for v in $(PYTHONS); do \
		python=$$(pyenv prefix $$v 2>/dev/null)/bin/python$$v; [ -x "$$python" ] || command -v python$$v >/dev/null || \
			{ echo "make test-all-pythons: no Python $$v (neither pyenv's nor python$$v on PATH)" >&2; exit 1; }; \
	done
	@for v in $(PYTHONS); do \
		python=$$(pyenv prefix $$v 2>/dev/null)/bin/python$$v; [ -x "$$python" ] || python=$$(command -v python$$v); \
		echo "== Python $$v ($$python)"; start=$$(date +%s); \
		$(MAKE) --no-print-directory PYTHON=$$python VENV=.venv-$$v test || { echo "== Python $$v: FAILED" >&2; exit 1; }; \
		echo "== Python $$v: passed in $$(( $$(date +%s) - start )) s"; \
	done

# The behaviour oracle: CPython's regression tests (tests/oracle/run.py's list; test_asyncio submodule by submodule)
# plain once and under tracetop with each instrumenter, compared test by test, on each of $(PYTHONS). Mostly
# waiting (asyncio's timeouts): ORACLE_JOBS modules at once.
ORACLE_JOBS ?= 4
oracle:
	@status=0; for v in $(PYTHONS); do \
		python=$$(pyenv prefix $$v 2>/dev/null)/bin/python$$v; [ -x "$$python" ] || python=$$(command -v python$$v) || \
			{ echo "no Python $$v"; exit 1; }; \
		$(MAKE) --no-print-directory PYTHON=$$python VENV=.venv-$$v .venv-$$v/.installed || exit 1; \
		.venv-$$v/bin/python tests/oracle/run.py --jobs $(ORACLE_JOBS) --instrumenter=profile,trace$$(.venv-$$v/bin/python -c \
			'import sys; print(",monitoring" * (sys.version_info >= (3, 12)))') || status=1; \
	done; exit $$status

test-c: $(VENV)/.installed
	$(VENV)/bin/meson setup $(CBUILD) --reconfigure $(MESON_ARGS) >/dev/null 2>&1 || \
		$(VENV)/bin/meson setup $(CBUILD) $(MESON_ARGS)
	$(VENV)/bin/meson test -C $(CBUILD) --print-errorlogs

# The Python tests in two runs: those that may share the machine, PYTEST_JOBS at once (pytest-xdist; most of
# a test's time is spent waiting on the programs it runs, so more than the cores), each module on one worker
# so that its module-scoped experiments are made once; then those marked serial (they load every core, or wait
# on a deadline of the product's), alone. A venv made before pytest-xdist and gevent were in .created gets them here.
# A test that failed in the parallel run is run once more, alone, as CPython's own suite does (regrtest --rerun):
# one that passes then is a test that fails on a loaded machine, a defect of the test that the run names, not of
# the product; one that fails again fails the run.
PYTEST_JOBS ?= 3
test-python: $(VENV)/.installed $(VENV)/.jupyter $(VENV)/.formats
	$(VPY) -c "import xdist, gevent" 2>/dev/null || $(VPY) -m pip install -q pytest-xdist gevent
	$(VENV)/bin/pytest -q -n $(PYTEST_JOBS) --dist loadscope -m "not serial" tests/python || { \
		echo "== the tests that failed beside others, run again alone (one that passes now fails on a loaded machine: fix it)"; \
		$(VENV)/bin/pytest -q -rfEp --last-failed --last-failed-no-failures none -m "not serial" tests/python; }
	$(VENV)/bin/pytest -q -m serial tests/python

# libFuzzer harnesses (tests/fuzz), built with clang, ASan and UBSan in build/fuzz, each run for FUZZ_SECONDS
# on a corpus made from real traces plus the inputs that once found a bug (tests/fuzz/regressions), which
# are replayed first. What a harness finds is left in build/fuzz/ and fails the target. CI: FUZZ_SECONDS=10.
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build/fuzz
# harness:seed corpus
FUZZERS := reader:trace filter:filter lod:lod agg:trace \
	$(foreach f,otf2 cubex perfetto chrome speedscope pstats collapsed,export_$(f):trace)
fuzz: $(VENV)/.installed
	@command -v clang >/dev/null || $(MAKE) --no-print-directory deps APT_PACKAGES=clang
	[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang $(VENV)/bin/meson setup $(FUZZ_BUILD) $(MESON_ARGS) -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Db_ndebug=false
	$(VENV)/bin/ninja -C $(FUZZ_BUILD) $(foreach f,$(FUZZERS),fuzz_$(firstword $(subst :, ,$(f))))
	rm -rf $(FUZZ_BUILD)/corpus && $(VPY) tests/fuzz/seeds.py $(CURDIR)/$(VENV)/bin/tracetop $(FUZZ_BUILD)/corpus >/dev/null
	@for f in $(FUZZERS); do h=$${f%%:*}; seeds=$${f#*:}; mkdir -p $(FUZZ_BUILD)/found/$$h tests/fuzz/regressions/$$h; \
		echo "== fuzz_$$h ($(FUZZ_SECONDS) s)"; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $(FUZZ_BUILD)/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) \
			-max_len=65536 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/$$h- $(FUZZ_BUILD)/found/$$h \
			tests/fuzz/regressions/$$h $(FUZZ_BUILD)/corpus/$$seeds 2>$(FUZZ_BUILD)/$$h.log || \
			{ tail -40 $(FUZZ_BUILD)/$$h.log; echo "fuzz_$$h found a bug: $(FUZZ_BUILD)/$$h-*"; exit 1; }; \
		grep -E "stat::number_of_executed_units|stat::new_units_added" $(FUZZ_BUILD)/$$h.log; \
	done

# The linters, at pinned versions (a newer one may judge the same code otherwise): ruff checks and formats
# the Python (pyproject.toml's [tool.ruff]), clang-format the C (.clang-format). `make lint` reports every
# finding and fails on any; `make format` applies the formatters and ruff's safe fixes, but to the programs the
# tests measure (tests/python/programs), whose lines the tests name by number: those are fixed by hand.
RUFF_VERSION := 0.17.6
CLANG_FORMAT := clang-format-14
LINT_PYTHON := tracetop tests bench examples
LINT_C = $(shell git ls-files -co --exclude-standard -- 'src/*.[ch]' 'tests/c/*.[ch]' 'tests/fuzz/*.[ch]' \
	'tests/sanitize/*.[ch]')
lint: $(VENV)/.lint
	@status=0; \
	$(VENV)/bin/ruff check --output-format=concise $(LINT_PYTHON) || status=1; \
	$(VENV)/bin/ruff format --check $(LINT_PYTHON) || status=1; \
	$(CLANG_FORMAT) --dry-run --Werror $(LINT_C) || status=1; \
	exit $$status

format: $(VENV)/.lint
	$(VENV)/bin/ruff check --fix --quiet --exit-zero --extend-exclude tests/python/programs $(LINT_PYTHON)
	$(VENV)/bin/ruff format $(LINT_PYTHON)
	$(CLANG_FORMAT) -i $(LINT_C)

$(VENV)/.lint: $(VENV)/.created
	@command -v $(CLANG_FORMAT) >/dev/null || $(MAKE) --no-print-directory deps APT_PACKAGES=$(CLANG_FORMAT)
	$(VPY) -m pip install -q ruff==$(RUFF_VERSION)
	touch $@

# The sanitizers, each over what it can see:
# - ASan, with its leak check, and UBSan over the C tests (tests/sanitize/lsan.supp: what is not a leak).
# - ASan and UBSan over SANITIZE_TESTS: Python tests that record, read, index and convert real programs' traces,
#   run by a virtual environment of its own (SANITIZE_VENV) whose extension is built with both. CPython is not,
#   so the ASan runtime is preloaded, and the leak check is off: CPython leaves its own memory to the exit.
#   PYTHONMALLOC=malloc lets ASan see each Python object's bounds. The fatal signals stay the program's and
#   tracetop's (the tests crash programs on purpose), and pytest captures Python's output alone, so that a
#   report written by the pytest process itself, which reads traces, reaches the log.
# - TSan over the threads of a measured process: test_threads (recording threads and the writer at once) and
#   the C tests that start a writer, but test_processes, whose fork beside the writer TSan cannot follow.
# A finding stops the process it is found in, with its report on stderr; each part runs, and any finding fails
# the target.
SANITIZE_VENV := .venv-asan
SANITIZE_MESON_ARGS := $(MESON_ARGS) -Dbuildtype=debugoptimized -Db_ndebug=false
SANITIZE_TESTS := test_recording.py test_program.py test_calltree.py test_fork.py test_bad_input.py test_index.py \
	test_convert.py
TSAN_BUILD := build/tsan
# -Wno-tsan: gcc warns that TSan does not model atomic_thread_fence, which only the live channel's ring uses
# (live.c), and no TSan test opens a channel.
TSAN_MESON_ARGS := $(SANITIZE_MESON_ARGS) -Db_sanitize=thread -Dc_args=-Wno-tsan
TSAN_TESTS := test_threads test_stream test_pool
SANITIZE_ENV := UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0
SANITIZE_PYTHON_ASAN := detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0
sanitize: $(VENV)/.created
	$(MAKE) --no-print-directory VENV=$(SANITIZE_VENV) \
		MESON_ARGS="$(SANITIZE_MESON_ARGS) -Db_sanitize=address,undefined" $(SANITIZE_VENV)/.installed
	$(VENV)/bin/meson setup $(TSAN_BUILD) --reconfigure $(TSAN_MESON_ARGS) >/dev/null 2>&1 || \
		$(VENV)/bin/meson setup $(TSAN_BUILD) $(TSAN_MESON_ARGS)
	$(VENV)/bin/meson compile -C $(TSAN_BUILD) $(TSAN_TESTS)
	@status=0; export $(SANITIZE_ENV); \
	echo "== ASan and UBSan: the C tests"; ASAN_OPTIONS=detect_leaks=1 $(MAKE) --no-print-directory \
		VENV=$(SANITIZE_VENV) MESON_ARGS="$(SANITIZE_MESON_ARGS) -Db_sanitize=address,undefined" test-c || status=1; \
	echo "== ASan and UBSan: $(SANITIZE_TESTS)"; ASAN_OPTIONS=$(SANITIZE_PYTHON_ASAN) PYTHONMALLOC=malloc \
		LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) \
		$(SANITIZE_VENV)/bin/pytest -q --capture=sys $(addprefix tests/python/,$(SANITIZE_TESTS)) || status=1; \
	echo "== TSan: $(TSAN_TESTS)"; \
	$(VENV)/bin/meson test -C $(TSAN_BUILD) --no-rebuild --print-errorlogs $(TSAN_TESTS) || status=1; \
	exit $$status

# The whole table (bench/run.py) on each of $(PYTHONS), each run by its venv .venv-X.Y, into bench/results/latest.md.
comma := ,
bench: $(VENV)/.installed
	@for v in $(PYTHONS); do \
		python=$$(pyenv prefix $$v 2>/dev/null)/bin/python$$v; [ -x "$$python" ] || python=$$(command -v python$$v) || \
			{ echo "no Python $$v"; exit 1; }; \
		$(MAKE) --no-print-directory PYTHON=$$python VENV=.venv-$$v .venv-$$v/.installed || exit 1; \
	done
	$(VPY) bench/run.py --pythons $(subst $() ,$(comma),$(strip $(PYTHONS)))

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		$(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

# Order-only on deps: mpi4py builds against the Debian OpenMPI.
$(VENV)/.created: | deps
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q meson-python meson ninja pytest pytest-xdist mpi4py gevent
	touch $@

# The Jupyter kernel's packages, and the clients its tests drive it with.
$(VENV)/.jupyter: $(VENV)/.created
	$(VPY) -m pip install -q ipykernel jupyter_client nbclient nbformat
	touch $@

# The consumers of the converted formats that the tests read them back with: pycubexr (CUBE4), Perfetto's
# protos, and speedscope's app (npm) driven in Chromium by Playwright.
$(VENV)/.formats: $(VENV)/.created | deps
	$(VPY) -m pip install -q pycubexr perfetto playwright
	npm install --silent --no-audit --no-fund --prefix $(VENV)/npm speedscope@1.25.0
	touch $@

$(VENV)/.installed: $(VENV)/.created $(SOURCES) | deps
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pip install -q --no-build-isolation \
		$(addprefix -Csetup-args=,$(MESON_ARGS)) .
	touch $@

clean:
	rm -rf build $(VENV) $(SANITIZE_VENV) demo-experiment
