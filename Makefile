# Two commands for a fresh clone: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast install lint typecheck pytest worker clean-venv

run: $(STAMP)
	$(PY) manage.py up --host $(HOST) --port $(PORT)

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy heterps_core webapp workers

# Exit 5 means "no tests collected" (say, PYTEST_ARGS selected an empty subset): report it,
# do not fail on it. Any other failure fails.
pytest: $(STAMP)
	@$(VENV)/bin/pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected (exit 5)"; exit 0; fi; exit $$rc

# The inner loop: every test but the slow and browser ones, spread over the cores
# (pytest-xdist, one test file per worker, each worker with its own var dir: tests/conftest.py).
# `make test` stays the whole suite, as CI runs it.
test-fast: $(STAMP)
	@$(VENV)/bin/pytest -m "not slow and not browser" -n auto --dist loadfile $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected (exit 5)"; exit 0; fi; exit $$rc

# A production worker machine: same checkout, DATABASE_URL and REDIS_URL set. Run one for
# QUEUES=interactive and one for QUEUES=long, so short work never waits behind long work.
worker: $(STAMP)
	$(VENV)/bin/celery -A workers worker --loglevel INFO --queues $${QUEUES:-interactive,long} \
	    --without-gossip --without-mingle

install: $(STAMP)

# The stamp depends on pyproject.toml, so the install reruns only when dependencies change.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

clean-venv:
	rm -rf $(VENV)
