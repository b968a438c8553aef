# innet-drl: one entry point for install, tests, demo, lint and benchmarks.
# `make test` on a fresh clone installs what is missing (apt packages when root, the .venv, the
# Python packages) and runs the test suite. Nothing is installed outside the repository except
# the apt packages below.

SHELL := /bin/bash
.DEFAULT_GOAL := test

# Python 3.11 exactly (pyproject: >=3.11,<3.12); prefer an explicit python3.11 if there is one.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)
VENV := .venv
VPY := $(VENV)/bin/python
# The stamp lives inside .venv so that deleting .venv also forces a reinstall.
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# `make test` runs the test files in this many pytest processes (pytest-xdist, one file per
# process at a time, so a file's module fixtures run once); 0: one process. Two fit the 2-core
# CI machine: one process kept ~1.1 cores busy (15-16 min for 17 min of CPU), two take 9.6 min.
PYTEST_WORKERS ?= 2

# Debian packages the tests need: iproute2 for `ip netns`/veth, ethtool to turn off veth
# checksum offload (frames captured by AF_PACKET otherwise carry unfinished checksums);
# iputils-ping for the demo's pings through the switch; libdpdk-dev + pkg-config to build the
# replay server's DPDK I/O path (dpdk_fallback/); redis-server for the Redis replay baseline;
# netsniff-ng for trafgen, the packet generator of `make bench`'s switch packets/s (a sender that
# is not the bottleneck). The native switch backend needs only the C compiler and its libasan
# (gcc's, for the sanitizer test), which a Debian gcc brings.
APT_PKGS := iproute2 ethtool iputils-ping libdpdk-dev pkg-config redis-server netsniff-ng

.PHONY: test run demo lint bmv2-test bench clean system-deps venv .venv replay-server

# The suite starts hundreds of Python processes (switches, agents, CLIs): with
# PYTHONDONTWRITEBYTECODE set (as some CI images do) each one compiled the project's modules
# again; the tests let Python keep its bytecode in __pycache__ (ignored by git).
test: system-deps $(STAMP) replay-server
	env -u PYTHONDONTWRITEBYTECODE $(VPY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The replay memory server (C): dpdk_fallback/build/replay_server, with the DPDK I/O path when
# pkg-config finds libdpdk, sockets only otherwise.
replay-server: system-deps
	$(MAKE) -C dpdk_fallback

# The main job: Ape-X on CartPole over the `star` topology (software switch running p4/innet.p4,
# the C replay server with the priorities in the switch, a learner and 4 actors, each in its own
# network namespace) until return 475 or the file's time budget; progress, a summary and
# runs/<run>/returns.png. Needs root. Other scenarios: make run RUN_FILE=topologies/two_tier.yaml
RUN_FILE ?= topologies/star.yaml
RUN_ARGS ?=
run: system-deps $(STAMP) replay-server
	$(VPY) -m topologies run $(RUN_FILE) $(RUN_ARGS)

# The software switch's own demo: an example P4 program routes pings between two namespaces.
demo: system-deps $(STAMP)
	$(VPY) -m softswitch.demo

lint: $(STAMP)
	$(VPY) -m ruff check .

# P4 packet tests (pytest -m stf) and a short end-to-end scenario (pytest -m e2e: Ape-X actors and
# learner with in-switch replay sampling, and four workers aggregating gradients, in namespaces
# through the switch, driven by the same control plane). With p4c-bm2-ss and simple_switch_grpc on
# PATH the P4 programs are first compiled for bmv2 (build/bmv2/), and the choice reaches the tests
# as INNET_P4_TARGET=bmv2. The STF runner (softswitch.stf) and the tests' switch launcher
# (topologies.testbed) start only the software switch so far, so the tests themselves run on it
# either way; the target line below says so. docs/deploy.md lists what has been run on which target.
bmv2-test: system-deps $(STAMP) replay-server
	@if command -v simple_switch_grpc >/dev/null 2>&1 && command -v p4c-bm2-ss >/dev/null 2>&1; then \
		echo "bmv2-test: bmv2 found ($$(command -v simple_switch_grpc), $$(command -v p4c-bm2-ss))"; \
		mkdir -p build/bmv2; \
		for prog in p4/innet.p4 p4/examples/basic_router.p4; do \
			name=$$(basename $$prog .p4); \
			echo "bmv2-test: p4c-bm2-ss $$prog -> build/bmv2/$$name.json"; \
			p4c-bm2-ss --arch v1model -I p4 -o build/bmv2/$$name.json \
				--p4runtime-files build/bmv2/$$name.p4info.txt $$prog || exit $$?; \
		done; \
		target=bmv2; \
		echo "bmv2-test: compiled for bmv2; the packet tests run on the software switch (the STF harness does not start simple_switch_grpc yet)"; \
		echo "bmv2-test: end-to-end on bmv2: python -m topologies run topologies/star.yaml --switch-target bmv2 (never run where this was written: no bmv2 there)"; \
		$(VPY) -m topologies run topologies/star.yaml --switch-target bmv2 --no-target --time-budget-s 90 || exit $$?; \
	else \
		echo "bmv2-test: target = softswitch (simple_switch_grpc/p4c-bm2-ss not on PATH)"; \
		target=softswitch; \
	fi; \
	rc=0; INNET_P4_TARGET=$$target $(VPY) -m pytest -q -m "stf or e2e" $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc = 5 ]; then echo "bmv2-test: no test is marked stf or e2e"; fi; \
	if [ $$rc = 0 ]; then echo "bmv2-test: passed (P4 packet tests + end-to-end scenario, on the software switch)"; \
	else echo "bmv2-test: FAILED (exit $$rc; P4 packet tests + end-to-end scenario on the software switch)"; fi; \
	exit $$rc

# All benchmarks into bench/results/run-<stamp>/ and the report bench/report.md (+ PNGs); root
# benchmarks are skipped when not root. Options via BENCH_ARGS, e.g. `make bench BENCH_ARGS=--quick`
# or BENCH_ARGS="--quick --skip learning".
bench: system-deps $(STAMP) replay-server
	$(VPY) -m bench.run_all $(BENCH_ARGS)

# apt packages, installed only when missing; `apt-get update` only when something must be installed.
system-deps:
	@missing=""; \
	for p in $(APT_PKGS); do \
		if command -v dpkg-query >/dev/null 2>&1; then \
			dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
		else \
			case "$$p" in iproute2) c=ip ;; iputils-ping) c=ping ;; *) c="$$p" ;; esac; \
			PATH="$$PATH:/usr/sbin:/sbin" command -v "$$c" >/dev/null 2>&1 || missing="$$missing $$p"; \
		fi; \
	done; \
	if [ ! -x "$(VPY)" ] && ! "$(PYTHON)" -c 'import ensurepip, venv' >/dev/null 2>&1; then \
		missing="$$missing python3-venv"; \
	fi; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "system-deps: not root, skipping apt-get install of:$$missing (namespace tests will be skipped)"; \
		exit 0; \
	fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "system-deps: no apt-get here; please install:$$missing"; exit 0; \
	fi; \
	echo "system-deps: installing$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing

venv .venv: $(STAMP)

$(VPY):
	@if [ -z "$(PYTHON)" ]; then echo "no python3 found; install Python 3.11" >&2; exit 1; fi
	@"$(PYTHON)" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' || { \
		echo "$(PYTHON) is Python $$("$(PYTHON)" -c 'import platform; print(platform.python_version())'); " \
		     "innet-drl needs 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
	"$(PYTHON)" -m venv $(VENV)

# Reinstall only when pyproject.toml changes (or the venv is new).
$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e '.[dev]'
	@touch $@

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache dpdk_fallback/build
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Allreduce benchmark (bench/README.md): in-switch aggregation vs parameter server vs gloo over
# one software switch; needs root. Options via AGG_ARGS, e.g. `make bench-aggregation AGG_ARGS=--quick`.
.PHONY: bench-aggregation
bench-aggregation: system-deps $(STAMP)
	$(VPY) -m bench.aggregation $(AGG_ARGS)

# Replay benchmark (bench/README.md): push/sample/update latency and throughput, in-switch sampling
# vs the C replay server (sockets, DPDK) vs Redis over one software switch; needs root. Options via
# REPLAY_ARGS, e.g. `make bench-replay REPLAY_ARGS=--quick`.
# Learning checks (bench/learning.py): Ape-X to CartPole 475, data-parallel sync vs gloo and async
# with/without staleness scaling; minutes each. Options via LEARN_ARGS (default: all parts).
.PHONY: bench-learning
bench-learning: system-deps $(STAMP) replay-server
	$(VPY) -m bench.learning $(or $(LEARN_ARGS),all)

.PHONY: bench-replay
bench-replay: system-deps $(STAMP) replay-server
	$(VPY) -m bench.replay $(REPLAY_ARGS)
