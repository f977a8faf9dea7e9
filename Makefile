# The two commands a newcomer needs: `make demo` and `make test` (see README.md).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv demo test lint crds histories

$(BIN)/osprov: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/osprov

# Installs the local stack if needed, starts it, runs worker + bridge, applies the examples.
demo: venv
	$(BIN)/osprov demo

# Everything CI runs: lint, then the whole suite (the stack is installed here and started by fixtures).
test: venv lint
	$(BIN)/osprov dev install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy api workflows activities bridge worker osprov

# Regenerate what is generated from the code (commit the result).
crds: venv
	$(BIN)/python -m api.crdgen
	$(BIN)/python -m examples.render_identity

histories: venv
	$(BIN)/python -m tests.replay.record
