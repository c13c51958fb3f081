# Two commands from a fresh clone: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Bytecode is cached (in __pycache__ folders, which git ignores and `make clean` removes),
# whatever PYTHONDONTWRITEBYTECODE the shell sets: without it every Python process the tests
# start (xdist workers, notebook kernels, agents under test, CLI runs) compiles the project
# again, and pytest rewrites the asserts of every test module in each worker (about 60 CPU
# seconds of `make test`, bench/RESULTS.md). The installed packages' bytecode is pip's.
RUN    := PYTHONDONTWRITEBYTECODE= PYTHONHASHSEED=0

.PHONY: demo test lint typecheck pytest exhaustive notebooks itf-check real-agents real-clients real-world clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,cluster]'
	touch $(STAMP)

# The main job: check ACP v1 as stabilised and print its verdicts, then write the reviewer's report
# (verdict matrix of every revision and profile, the open choices, the amendments, findings to take
# upstream, counterexamples, kill matrix, open questions).
# The two answer from the user's cache of explorations (docs/cli.md, "Answers remembered across
# runs": ~/.cache/acp-sysprompt, or $ACP_SYSPROMPT_CACHE; `acp-sysprompt cache clear` empties
# it): the report judges v1-stable's population again and finds every search the check ran, and
# the user's next check or amendment over v1-stable finds them too. ACP_SYSPROMPT_CACHE=off:
# nothing remembered.
demo: $(STAMP)
	@$(RUN) $(BIN)/acp-sysprompt check --revision v1-stable; \
	$(RUN) $(BIN)/acp-sysprompt report --out out/report

lint: $(STAMP)
	$(BIN)/ruff check model simulations tests bench tools examples
	$(BIN)/ruff format --check model simulations tests bench tools examples

typecheck: $(STAMP)
	$(BIN)/mypy

# the tests are independent: pytest-xdist workers, one per core and two more (the conform,
# agent and notebook tests wait on the processes they start; the spare workers fill those
# waits: 507 -> 464 s on 2 cores from three workers to four, bench/RESULTS.md); idle workers
# take tests from busy ones. One test
# alone: `.venv/bin/pytest tests/test_x.py::test_y`. Hypothesis's shrinking depends on the
# string hash seed, so it is fixed: every run shrinks the same way.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 2)')
pytest: $(STAMP)
	$(RUN) HYPOTHESIS_PROFILE=ci $(BIN)/pytest -n $(WORKERS) --dist worksteal

test: lint typecheck pytest

# What `make test` leaves out (pytest marker `exhaustive`): the rest of each matrix, the SDK
# agents' full live plans, the repeats on bigger bounds, the live notebook, the long documented
# commands. One table with the reasons: tests/suite_split.py (docs/cli.md says what is where).
exhaustive: $(STAMP)
	$(RUN) HYPOTHESIS_PROFILE=ci $(BIN)/pytest -n $(WORKERS) --dist worksteal -m exhaustive

# Jupyter Lab in the project's environment (installs the notebooks extra on first use).
notebooks: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,notebooks]'
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

# Quint's own ITF reader on every counterexample trace: the 31 mutants' (written to out/itf) and
# the report's, if `make demo` wrote it. Needs Node.js and npm (installs Quint, pinned by
# tools/quint/package-lock.json, into tools/quint/node_modules); not part of `make test`.
itf-check: $(STAMP)
	cd tools/quint && npm ci --silent --no-audit --no-fund
	$(BIN)/python tools/write_itf_traces.py out/itf
	node tools/quint/check_itf.cjs --self-test out/itf $(wildcard out/report/counterexamples)

# Real agents (needs Node and npm; not part of `make test`, which runs the same conform paths
# against the reference agent's --model-endpoint mode): the eleven agents the shipped recipes name
# (simulations/live/recipes). The nine npm agents, and the Node 22 qwen-code needs, are installed
# from real-agents/package-lock.json (tools/npm_install.sh: an install script runs with a scratch
# HOME and TMPDIR, so opencode-ai's postinstall writes nothing in yours or the shared /tmp):
# `npm install --no-save`, not `npm ci`, since the lockfile pins every package it installs
# (versions and integrity hashes, and it is left unchanged) but cannot list the optional binaries of opencode-ai and qwen-code for other platforms, which the
# registry here does not serve, and `npm ci` refuses that. The two PyPI agents go each into its
# own venv, real-agents/venvs/NAME, from real-agents/python/*.txt (hashes required), on a Python
# >= 3.12 found on this machine (tools/python_agents.py; docs/recipes.md says where it looks):
# where there is none they are SKIPPED, never failed. Each is judged by conform through the
# recording model endpoint, offline (each agent process in the sandbox of docs/sandbox.md: its
# own user, network, mount and PID namespaces); writes docs/real-agents.md and
# out/real-agents/*.json, and the page's picture and summaries (docs/real-agents.png, .json).
# Each plan runs REPEAT times, its coverage tests once (--repeat-rows; 3: an agent that fails an
# id in 3 of 5 runs shows it unstable in about 7 of 10 such runs; docs/conform.md, "Pinned
# results"), and what each agent showed is compared with the pins of real-agents/expectations.toml (exit 1,
# each difference named). AGENTS="codex-acp zed-codex-acp" runs only those recipes (default:
# every shipped one); the page keeps the other agents' sections as they were.
AGENTS ?=
REPEAT ?= 3
real-agents: $(STAMP)
	sh tools/npm_install.sh real-agents
	$(RUN) $(BIN)/python tools/python_agents.py $(AGENTS)
	$(RUN) $(BIN)/python tools/real_agents.py --repeat $(REPEAT) --repeat-rows \
		--expect real-agents/expectations.toml $(AGENTS)

# Real clients (needs npm; not part of `make test`, which runs conform-client on the repository's
# own scripted client and its faulty builds): acpx 0.19.1 and the Node 22 it needs, installed from
# real-clients/package-lock.json, driven by conform-client against the reference agent under each
# capability profile of the plan (offline: each step in the sandbox of docs/sandbox.md); writes
# docs/real-clients.md and out/real-clients/*.json.
# `npm install --no-save`, not `npm ci`: the lockfile pins every package it installs (versions and
# integrity hashes, and it is left unchanged), but it cannot list @openclaw/fs-safe's optional
# binaries for other platforms, which the registry does not serve, and `npm ci` refuses that.
real-clients: $(STAMP)
	sh tools/npm_install.sh real-clients
	$(RUN) $(BIN)/python tools/real_clients.py

# Real client × real agent (needs Node and npm; not part of `make test`, which runs the same
# code on the repository's scripted client and the reference agent in its model-endpoint mode,
# faulty pairings included: tests/test_world.py): each client of the shipped client recipes
# drives each agent of the shipped agent recipes, the user's prompt given in each way the client
# offers, through a new session, a turn, a reopen in a new client process and a fork where both
# have one; each agent offline against the recording model endpoint. Writes docs/real-world.md,
# its picture docs/real-world.png and out/real-world/world.json. AGENTS="codex-acp" runs only
# those agent recipes (the page then holds only them).
real-world: $(STAMP)
	sh tools/npm_install.sh real-agents
	$(RUN) $(BIN)/python tools/python_agents.py $(AGENTS)
	sh tools/npm_install.sh real-clients
	$(RUN) $(BIN)/python tools/real_world.py $(if $(AGENTS),--agents $(AGENTS))

clean:
	rm -rf $(VENV) build *.egg-info
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
