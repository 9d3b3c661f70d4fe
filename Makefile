# mcpfast developer commands. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.mcpfast-installed
RUST_SOURCES := $(wildcard rust/*.rs) Cargo.toml Cargo.lock

.PHONY: help setup serve test test-fast conformance lint docs bench bench-http bench-servers clean fuzz fuzz-smoke

help:  ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

SETUP_LOG := $(VENV)/setup.log
# Setup is quiet: its output goes to $(SETUP_LOG), shown only when a step fails.
QUIET = >>$(SETUP_LOG) 2>&1 || { cat $(SETUP_LOG); echo "mcpfast: setup failed (log: $(SETUP_LOG))" >&2; exit 1; }

$(PY):
	@echo "mcpfast: creating $(VENV) (Python, dependencies, release build of the Rust codec)"
	@$(PYTHON) -m venv $(VENV) && : > $(SETUP_LOG)
	@$(PY) -m pip install -q --upgrade pip $(QUIET)

$(STAMP): $(PY) pyproject.toml $(RUST_SOURCES)
	@$(PY) -m pip install -q "maturin>=1.7,<2" $(QUIET)
	@VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop -q --release --extras dev,interop,load,redis,metrics,skills,bench,docs $(QUIET)
	@touch $(STAMP)

setup: $(STAMP)  ## create .venv, install dependencies, build the Rust extension (release)

serve: setup  ## set up, then run the demo server on http://127.0.0.1:8000/mcp
	$(VENV)/bin/mcpfast serve $(ARGS)

# pytest-xdist workers for `make test`: the e2e tests mostly wait on sockets, subprocesses and
# timers, so more workers than cores pay off. `make test XDIST=0` runs each pytest in one process.
XDIST ?= 4
XDIST_ARGS = $(if $(filter 0,$(XDIST)),,-n $(XDIST) --dist worksteal)

# Pytest's rewritten test modules and the package's bytecode are cached in __pycache__ even where
# the environment says not to write bytecode: each pytest-xdist worker and server process would
# otherwise compile them again (about 4 s of each worker's collection).
unexport PYTHONDONTWRITEBYTECODE

# $(call pytest_run,LABEL,ENV,ARGS[,MARKS[,SERIAL_WORKERS]]): pytest ARGS (with ENV) on $(XDIST)
# workers, then the tests marked `serial` (locust runs: they need the machine to themselves) in
# one process of their own, or on SERIAL_WORKERS workers; MARKS (e.g. "and not both_engines")
# narrows both; a `serial` run with nothing selected (exit 5) is not an error. Each prints its
# skip reasons (-rs).
define pytest_run
@echo "=== make test: pytest $(1)"
$(2) $(PY) -m pytest -q -rs $(XDIST_ARGS) -m "not serial $(4)" $(3) $(PYTEST_ARGS)
@echo "=== make test: pytest $(1), the serial tests"
$(2) $(PY) -m pytest -q -rs $(if $(filter 0,$(XDIST)),,$(if $(5),-n $(5) --dist loadgroup)) -m "serial $(4)" $(3) $(PYTEST_ARGS) || [ $$? = 5 ]
endef

# e2e modules and tests whose servers do not depend on the engine under test (peers, both engines
# side by side, locust's own distribution, the README's load command lines), and those that run
# each engine themselves (marked `both_engines`): the native pass leaves them out.
ENGINE_FREE = $(foreach m,test_load_peers test_load_compare test_load_distributed test_load_fast_distributed test_interop_peer_servers test_load_rmcp,--ignore=tests/e2e/$(m).py) \
	$(foreach t,test_load_against_fastmcp_skips_what_it_lacks test_load_against_the_official_sdk_server,--deselect=tests/e2e/test_load.py::$(t)) \
	--deselect=tests/e2e/test_readme.py::test_the_load_lines

# The serial tests of the first and the native pass, two at a time: the busiest (the deployment
# test, the packaging build, the soak, the slow clients, several locust runs at once) are one
# xdist group, one at a time, beside lighter ones (tests/e2e/conftest.py: BUSIEST).
SERIAL_WORKERS = 2

test: setup  ## set up, then run the whole test suite (Rust, unit, e2e, interop, conformance)
	@echo "=== make test: cargo test, and beside it cargo build benches/rmcp_echo (rmcp, the Rust SDK: a peer of tests/e2e/test_load_rmcp.py)"
	cargo test -q & tests=$$!; (cd benches/rmcp_echo && CARGO_TARGET_DIR=target cargo build -q); \
	built=$$?; wait $$tests && [ $$built = 0 ]
	$(call pytest_run,(everything),,,,$(SERIAL_WORKERS))
	$(call pytest_run,(codec and e2e: pure-Python codec),MCPFAST_NO_EXTENSIONS=1,tests/test_codec.py tests/test_http11.py tests/e2e -k "not load")
	$(call pytest_run,(e2e: native engine),MCPFAST_TEST_ENGINE=native,tests/e2e $(ENGINE_FREE),and not both_engines,$(SERIAL_WORKERS))
	@echo "=== make test: conformance (server legs on both engines and on two workers over Redis, client legs, authorization server; side by side)"
	bash tests/conformance/run_all.sh
	@$(MAKE) --no-print-directory docs

test-fast: setup  ## the tests that open no socket and start no process (tests/isolation.py)
	$(PY) -m pytest -q -rs -m "not slow" $(PYTEST_ARGS)

# mkdocs prints a warning (a broken link, anchor, snippet or reference) and --strict fails on it;
# -q would hide the warnings and pass, so only its INFO lines are left out.
docs: setup  ## build the documentation site strictly into site/ (docs/, mkdocs.yml)
	@echo "=== make docs: mkdocs build --strict"
	@set -o pipefail; NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict 2>&1 | { grep -v '^INFO' || true; }

conformance: setup  ## the official conformance suite: server legs and client legs
	bash tests/conformance/run.sh
	bash tests/conformance/run_client.sh

lint: setup  ## ruff, mypy (strict), stubtest, cargo fmt and clippy
	$(VENV)/bin/ruff check python tests benches loadtests build_backend examples docs/hooks
	$(VENV)/bin/ruff format --check python tests benches loadtests build_backend examples docs/hooks
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest mcpfast._rust
	cargo fmt --check
	cargo clippy --all-targets -q -- -D warnings

bench: setup  ## codec micro-benchmark: Rust vs pure Python
	$(PY) benches/bench_codec.py

bench-servers: setup  ## MCP servers side by side in both eras (mcpfast, SDK, FastMCP, rmcp)
	cd benches/rmcp_echo && CARGO_TARGET_DIR=target cargo build --release -q
	$(PY) benches/bench_servers.py --chart benches/bench_servers.png

# Coverage-guided fuzzing of the Rust codec (cargo-fuzz, nightly; fuzz/, HARDENING.md). Each
# target runs for FUZZ_SECONDS, one process, on its committed seeds (fuzz/corpus/<target>, read
# only) and what earlier runs found (fuzz/corpus-run/<target>, not committed; tests/
# test_fuzz_corpus.py replays both through the two codec backends). A crash stops the run and
# leaves its input in fuzz/artifacts/<target>/.
FUZZ_TARGETS := frame check_headers verify_token parse_head
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_RUN = cd fuzz && for target in $(FUZZ_TARGETS); do \
	mkdir -p corpus-run/$$target && echo "=== fuzz: $$target, $(1) s" && \
	cargo +nightly fuzz run -O $$target corpus-run/$$target corpus/$$target -- \
		-max_total_time=$(1) -print_final_stats=1 2>&1 | grep -E '^(stat::number|stat::average|Done)|DONE|panicked|ERROR|SUMMARY|artifact' ; \
	[ $${PIPESTATUS[0]} = 0 ] || exit 1; done

fuzz:  ## fuzz each Rust entry point for FUZZ_SECONDS (default 60) with cargo-fuzz (nightly)
	$(call FUZZ_RUN,$(FUZZ_SECONDS))

fuzz-smoke:  ## a few seconds of each fuzz target (FUZZ_SMOKE_SECONDS, default 5)
	$(call FUZZ_RUN,$(FUZZ_SMOKE_SECONDS))

clean:  ## remove the virtual environment and build output
	rm -rf $(VENV) target
