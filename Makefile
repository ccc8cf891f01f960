# The README's two commands are `make demo` and `make test`; both create .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
export UV_PYTHON_DOWNLOADS := never

.PHONY: setup mermaid demo test test-fast lint clean

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "krag needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check uv
	$(VENV)/bin/uv pip install --quiet --python $(PY) -c constraints.txt -e ".[test]"
	touch $(STAMP)

setup: $(STAMP) mermaid

# Pinned mermaid.js (ui/package-lock.json, integrity-checked by `npm ci`) into the git-ignored
# ui/static/mermaid/ the UI serves locally. Without npm (or offline) the UI shows diagram
# sources instead, so this step never fails the build.
mermaid:
	@./scripts/install_mermaid.sh || echo "note: mermaid.js not installed; the UI will show diagram sources"

# One question with one answer: no-LLM mode answers it from a sentence of the corpus (a
# two-part question such as "What did Codd propose, and which systems were built on it?"
# needs an answer model; see README, "Quickstart").
DEMO_QUESTION ?= Which query language was based on Codd's relational calculus?

# Embedded PostgreSQL + the bundled sample corpus + a streamed answer (no-LLM mode when no
# LLM is reachable; set KRAG_CHAT_MODEL to use Ollama or an OpenAI-compatible server).
demo: setup
	$(VENV)/bin/krag doctor
	$(VENV)/bin/krag ingest graph_flows/sample_corpus --source sample
	$(VENV)/bin/krag ask "$(DEMO_QUESTION)"
	@echo
	@echo "Open the chat UI with:  $(VENV)/bin/krag ui   (then http://127.0.0.1:8501)"

# Both cores (pytest-xdist; `make test TEST_WORKERS=0` runs in this process): each worker
# starts its own embedded PostgreSQL and migrates its own template database once
# (tests/pg_fixtures.py). --dist loadfile sends a module's tests to one worker, so module-
# and session-scoped fixtures (a started server, the ingested sample corpus) are built once
# per worker, not once per test scheduled elsewhere.
TEST_WORKERS ?= auto
PYTEST_XDIST := -n $(TEST_WORKERS) --dist loadfile

test: setup
	$(PY) -m pytest $(PYTEST_XDIST)

# The fast tier only (no subprocess servers, browsers, kill/restart or load tests).
test-fast: setup
	$(PY) -m pytest $(PYTEST_XDIST) -m "not slow"

# ruff, then the import contracts of docs/ARCHITECTURE.md (pyproject [tool.importlinter]).
lint: setup
	$(VENV)/bin/ruff check graph_flows storage ui prompts tests bench
	$(VENV)/bin/lint-imports --no-cache

clean:
	rm -rf $(VENV) .krag .pytest_cache ui/node_modules
