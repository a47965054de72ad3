# tracetop: `make demo` and `make test` are all a newcomer needs.
# Both install what is missing: Debian packages (with apt-get, as root or
# through sudo) and a virtual environment in .venv with tracetop inside.

PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
# The C tests' build, one per virtual environment (each may be another Python's).
CBUILD := build/c$(patsubst .venv%,%,$(notdir $(VENV)))
APT_PACKAGES := gcc pkg-config libxxhash-dev libzstd-dev libotf2-trace-dev otf2-tools chromium nodejs libncurses-dev tmux openmpi-bin libopenmpi-dev gdb
SOURCES := $(shell git ls-files -co --exclude-standard -- src tracetop tracetop-follow.pth meson.build meson.options pyproject.toml 2>/dev/null)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-all-pythons test-c test-python bench deps clean

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

test-c: $(VENV)/.installed
	$(VENV)/bin/meson setup $(CBUILD) --reconfigure >/dev/null 2>&1 || $(VENV)/bin/meson setup $(CBUILD)
	$(VENV)/bin/meson test -C $(CBUILD) --print-errorlogs

test-python: $(VENV)/.installed $(VENV)/.jupyter $(VENV)/.formats
	$(VENV)/bin/pytest -q tests/python

bench: $(VENV)/.installed
	$(VPY) bench/run.py

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
	$(VPY) -m pip install -q meson-python meson ninja pytest mpi4py
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
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pip install -q --no-build-isolation .
	touch $@

clean:
	rm -rf build $(VENV) demo-experiment
