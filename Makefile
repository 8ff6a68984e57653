# Every target creates .venv when it is missing, so each is the only command a fresh machine needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared

.PHONY: demo check test postgres chromium valgrind instructions lint bench compat fuzz accept accept-shared golden-shared cli-docs clean

# The semantic extra's table is its own distribution, which the extra finds in this
# checkout (memplug/semantic/table/requirement.py).
$(STAMP): pyproject.toml memplug/semantic/table/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,lint,pydantic-ai,mcp,semantic,bench,sync,ui,browser]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m memplug.demo

# The fast loop: the suite without the tests marked slow (their own processes, crashes,
# large corpora), on two workers (docs/reliability.md). Measured on a 2-core machine on
# 2026-12-04: 55 s of wall time, 100 s of CPU; `make test` 110 s in .ci/run.
check: $(STAMP) postgres chromium
	$(BIN)/python -m pytest -n 2 -q -m "not slow"

# The whole suite, the slow tests included. The sync tests run a real PostgreSQL server:
# Debian's, installed here when it is missing (as root, as on CI).
test: $(STAMP) postgres chromium
	$(BIN)/python -m pytest -n 2 -q

# The viewer's browser tests drive Debian's chromium (Playwright downloads no browser).
chromium:
	@test -x /usr/bin/chromium || { \
	  test "$$(id -u)" = 0 || { echo "error: the viewer tests need chromium: sudo apt-get install chromium" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }

postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  test "$$(id -u)" = 0 || { echo "error: the sync tests need PostgreSQL: sudo apt-get install postgresql" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; }

valgrind:
	@command -v valgrind >/dev/null || { \
	  test "$$(id -u)" = 0 || { echo "error: the instruction budget needs valgrind: sudo apt-get install valgrind" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind; }

# The prompt hook's instructions within 3% of the commit in bench/instruction_reference
# (bench/instruction_budget.py says why a count, and how the reference moves); ~40 s.
instructions: $(STAMP) valgrind
	$(BIN)/python -m bench.instruction_budget --shared $(SHARED)

lint: $(STAMP)
	$(BIN)/ruff check memplug tests bench
	$(BIN)/ruff format --check memplug tests bench
	$(BIN)/mypy memplug

bench: $(STAMP)
	$(BIN)/python -m bench.run --shared $(SHARED)

compat: $(STAMP)
	$(BIN)/python -m bench.compat --shared $(SHARED)

fuzz: $(STAMP)
	$(BIN)/python -m pip install --quiet atheris
	$(BIN)/python tests/fuzz/run.py --seconds $${FUZZ_SECONDS:-60}

ACCEPTANCE := foundation assembly claude-code reliability core structural worktrees sessions

# Checked before anything is installed: a missing ../shared is one line, as in make bench.
accept-shared:
	@for c in $(ACCEPTANCE); do test -x $(SHARED)/acceptance/$$c || { \
	  echo "error: make accept needs $(SHARED)/acceptance/$$c; nothing was run (set SHARED=path/to/shared)" >&2; \
	  exit 2; }; done

accept: accept-shared $(STAMP) golden-shared
	for c in $(ACCEPTANCE); do $(SHARED)/acceptance/$$c || exit 1; done

# The next session's first message after a real shared session of typed decisions, against
# fixtures/golden/structural-next-session.en.txt, and every shared Codex rollout's counts
# against the hand counts (the data stays in $(SHARED)).
golden-shared: $(STAMP)
	MEMPLUG_HOME=$$(mktemp -d) $(BIN)/python -m bench.structural_golden --shared $(SHARED)
	$(BIN)/python -m bench.codex --shared $(SHARED) --check

cli-docs: $(STAMP)
	$(BIN)/python -m memplug.cli.docs docs/cli.md

clean:
	rm -rf $(VENV) .memplug-demo build dist
