# `make run` runs the default co-evolution; `make test` runs the test suite; `make docs` builds
# the documentation site into site/ (mkdocs --strict: a broken link or API reference fails).
# Both create or reuse .venv and install what they need (torch pinned to the CPU build).
# RLlib's tests run in a venv of their own, .venv-rllib (coevo[rllib]: ray[rllib] pins its own
# gymnasium, not the one of .venv), made and reused the same way; `make test` runs them last.
# `make test` runs ruff, pytest in 2 processes (pytest-xdist), then pyright (basic mode); a module whose tests share one
# expensive run is kept on one of them (pytest.mark.xdist_group). PYTEST_ARGS="-n 0" runs
# it in one process.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.coevo-installed
RLLIB_VENV ?= .venv-rllib
RLLIB_STAMP := $(RLLIB_VENV)/.coevo-installed
# The tests that need RLlib; the main venv skips them.
RLLIB_TESTS := tests/integrations/test_rllib.py tests/policies/test_rllib_module.py tests/test_examples.py::test_rllib_plr
ARGS ?=
# Bytecode caches on, even where the shell turns them off: every Ray worker and coevo-run
# subprocess would otherwise compile coevo again (~0.3 s of CPU each).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install run test lint docs bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(BIN)/python -m pip install -q -e ".[test,box2d,sb3,curricula,cppn,docs]"
	touch $(STAMP)

$(RLLIB_STAMP): pyproject.toml constraints.txt
	test -x $(RLLIB_VENV)/bin/python || $(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_VENV)/bin/python -m pip install -q --upgrade pip
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(RLLIB_VENV)/bin/python -m pip install -q -e ".[rllib]" "pytest>=8,<9" "pytest-timeout>=2.3"
	touch $(RLLIB_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/coevo-run $(ARGS)

# pyright runs beside RLlib's tests: they take one core, and pyright the other.
test: $(STAMP) $(RLLIB_STAMP)
	bash tools/ensure-chromium.sh
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup $(PYTEST_ARGS)
	$(BIN)/pyright > $(VENV)/pyright.log 2>&1 & checking=$$!; \
	$(RLLIB_VENV)/bin/python -m pytest -q $(RLLIB_TESTS); rllib=$$?; \
	wait $$checking; typed=$$?; cat $(VENV)/pyright.log; \
	test $$rllib -eq 0 && test $$typed -eq 0

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) $(RLLIB_VENV) runs outputs multirun .pytest_cache site
