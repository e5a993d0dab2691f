# Two entry points do all the set-up from nothing: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIN    := -c packaging/constraints.txt

.PHONY: install demo test lint bench-io clean dist dist-check

$(BIN)/dcstudio: pyproject.toml packaging/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and alone, so that nothing can pull a CUDA build
	$(BIN)/python -m pip install -q $(PIN) torch==2.13.0
	$(BIN)/python -m pip install -q $(PIN) -e '.[dev]'
	touch $@

install: $(BIN)/dcstudio

demo: install
	$(BIN)/dcstudio demo

# pytest-xdist: one worker per core (at most 4, each holds torch and Qt), each test file whole in one worker (its
# module-scoped fixtures built once), files in collection order (tests/conftest.py puts the long ones first).
XDIST := -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder

test: install
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q $(XDIST)
	$(BIN)/ruff check core gui tests benchmarks packaging/launcher.py
	$(BIN)/lint-imports

lint: install
	$(BIN)/ruff check core gui tests benchmarks packaging/launcher.py
	$(BIN)/lint-imports

# Release archive (own venv .venv-build; several minutes) and its pre-release check (not part of `make test`).
dist:
	bash packaging/build.sh

dist-check:
	bash packaging/dist_check.sh

clean:
	rm -rf $(VENV) build dist *.egg-info
