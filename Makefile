# `make run` runs the default co-evolution; `make test` runs the test suite; `make docs` builds
# the documentation site into site/ (mkdocs --strict: a broken link or API reference fails).
# Both create or reuse .venv and install what they need (torch pinned to the CPU build).
# `make test` runs ruff, pyright (basic mode) and pytest in 2 processes (pytest-xdist); a module whose tests share one
# expensive run is kept on one of them (pytest.mark.xdist_group). PYTEST_ARGS="-n 0" runs
# it in one process.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.coevo-installed
ARGS ?=

.PHONY: install run test lint docs bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(BIN)/python -m pip install -q -e ".[test,box2d,sb3,curricula,cppn,docs]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/coevo-run $(ARGS)

test: $(STAMP)
	bash tools/ensure-chromium.sh
	$(BIN)/ruff check .
	$(BIN)/pyright
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup $(PYTEST_ARGS)

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) runs outputs multirun .pytest_cache site
