# The two commands a fresh machine needs: `make demo` and `make test`.
# Both create (or reuse) .venv from pyproject.toml on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo serve-demo test lint typecheck bench stress clean

# uv installs what pip would (the same resolution from the same index), downloading in
# parallel and compiling the bytecode on every core: 20 s instead of pip's 46 s on 2 cores.
# Where uv cannot be installed, pip does the work.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "abridged needs Python >= 3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if $(BIN)/python -m pip install --quiet --disable-pip-version-check uv 2>/dev/null; then \
	  echo "$(BIN)/python -m uv pip install --compile-bytecode -e '.[dev]'"; \
	  $(BIN)/python -m uv pip install --quiet --python $(BIN)/python --compile-bytecode -e '.[dev]'; \
	else \
	  echo "$(BIN)/python -m pip install -e '.[dev]'"; \
	  $(BIN)/python -m pip install --quiet --upgrade pip && \
	  $(BIN)/python -m pip install --quiet -e '.[dev]'; \
	fi
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/abridged demo

# `abridged serve` on SQLite in front of a local fake Messages API, with a generated
# coding-agent session replayed through it by the anthropic SDK (examples/serve_demo.py).
serve-demo: $(STAMP)
	$(BIN)/python -m examples.serve_demo

# compileall first: the suite starts many Python processes (workers, the CLI, stores), and
# where PYTHONDONTWRITEBYTECODE is set each would compile the package from source again.
# mypy runs beside pytest rather than before it (from a cold cache it keeps one core busy for
# half a minute, and pytest's workers leave a core idle while they wait on the processes,
# servers and browser they start); its report follows pytest's, and both must pass.
test: $(STAMP) lint
	$(BIN)/python -m compileall -q -j 0 abridged domain application adapters tests > /dev/null
	@echo "$(BIN)/mypy (beside pytest) && $(BIN)/python -m pytest"
	@types=$$(mktemp); $(BIN)/mypy > $$types 2>&1 & checker=$$!; \
	$(BIN)/python -m pytest; tested=$$?; \
	wait $$checker; typed=$$?; cat $$types; rm -f $$types; \
	test $$tested -eq 0 && test $$typed -eq 0

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m tests.benchmarks.loop
	$(BIN)/python -m tests.benchmarks.prefix
	$(BIN)/python -m tests.benchmarks.components
	$(BIN)/python -m tests.benchmarks.redaction
	$(BIN)/python -m tests.benchmarks.audit
	$(BIN)/python -m tests.benchmarks.management
	$(BIN)/python -m tests.benchmarks.background
	$(BIN)/python -m tests.benchmarks.huge_compaction

# The full reliability run (tests/reliability/stress.py): kill -9 at random points and
# concurrent writers, on a SQLite file and on a PostgreSQL server it starts; prints figures.
stress: $(STAMP)
	$(BIN)/python -m tests.reliability.stress

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
