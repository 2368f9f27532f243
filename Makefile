# RTA Studio. Quick start: `make run` (app with a demo project), `make test` (whole suite).
SHELL := /bin/sh
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/rta
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
PYTEST_ARGS ?= -n 2 --dist loadgroup

.PHONY: run test lint bench venv dev-venv clean fake-llm

$(VENV)/.runtime: requirements.txt
	@test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

venv: $(VENV)/.runtime
dev-venv: $(VENV)/.dev

# Embedded defaults: SQLite and in-process tasks unless DATABASE_URL / REDIS_URL are set.
run: venv
	DEBUG=$${DEBUG:-true} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-true} $(PY) manage.py load_demo
	@echo ""
	@echo "  RTA Studio:  http://127.0.0.1:8000/"
	@echo "  Demo login:  demo / demo-password-rta"
	@echo ""
	DEBUG=$${DEBUG:-true} $(PY) manage.py runserver 127.0.0.1:8000

# Live interviews without an API key: a local OpenAI-compatible server with demo models
# (run beside `make run`; it adds live demo participants and a small demo probe to the demo project).
fake-llm: venv
	DEBUG=$${DEBUG:-true} $(PY) manage.py probe_demo
	DEBUG=$${DEBUG:-true} $(PY) manage.py fake_llm --setup

# The whole suite (unit, integration, browser) against PostgreSQL and Redis.
test: dev-venv
	@scripts/ensure-services
	@scripts/ensure-chromium
	@scripts/ensure-tex
	@scripts/ensure-docker
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest $(PYTEST_ARGS)

lint: dev-venv
	$(VENV)/bin/ruff check .

# Benchmarks (bench/README.md); PEERS=1 also runs Taguette and doccano side by side.
bench: dev-venv
	@scripts/ensure-services
	@scripts/ensure-wrk
	$(PY) -m pip install --quiet -r bench/requirements.txt
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) PEERS=$(PEERS) $(PY) bench/run.py

clean:
	rm -rf $(VENV) staticfiles db.sqlite3
