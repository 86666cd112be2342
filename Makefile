# hsrtcp — the single entry point. `make help` lists the targets.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
export PATH := $(HOME)/.cargo/bin:$(PATH)
RATTAN_VERSION := 0.1.1
PY_DEPS := maturin polars pyarrow duckdb numpy matplotlib click rich tomli-w dpkt pynmea2 gpxpy pycrate cryptography 'dask[distributed]' pytest hypothesis selenium

.PHONY: help demo test test-rust test-python test-packaging build venv report-js wheel docs docs-data docs-serve sysdeps rattan ebpf bench bench-lab bench-corpus bench-gsmtap bench-study bench-consumers bench-report fixtures fuzz fuzz-tools fuzz-seeds fuzz-decode fuzz-reader fuzz-engine fuzz-pair fuzz-pair_output lint clean study findings golden

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The venv's interpreter: Debian's CPython 3.11 when present, else python3 from PATH. Debian
# builds it with PGO and LTO and links libpython in; the machine's default python3 (pyenv
# 3.11.7, shared libpython, no PGO) takes 4 ms longer to start `hsrtcp analyze` with its
# imports (16 ms against 12 ms), a twentieth of a million-packet run (docs/design.md).
VENV_PYTHON := $(firstword $(wildcard /usr/bin/python3.11) python3)

$(VENV)/.deps: pyproject.toml
	$(VENV_PYTHON) -m venv $(VENV) || python3 -m venv --clear $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(PY_DEPS)
	@# setuptools (put there by venv, needed by nothing here) hooks every interpreter start
	@# through distutils-precedence.pth: half a millisecond of each `hsrtcp` run.
	$(PIP) uninstall -q -y setuptools
	touch $@

venv: $(VENV)/.deps  ## Python virtual environment with the dependencies

sysdeps:  ## Debian packages: tcpdump, tshark, tcptrace, iperf3, nftables, chromium (report tests), clang/libbpf/bpftool (root only)
	@missing=""; for t in tcpdump tshark tcptrace iperf3 nft chromium chromedriver clang bpftool; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	[ -f /usr/include/bpf/bpf_helpers.h ] || missing="$$missing libbpf-dev"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing:$$missing"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcpdump tshark tcptrace iperf3 nftables iproute2 \
	      chromium chromium-driver clang libbpf-dev bpftool >/dev/null; \
	  else echo "warning: missing$$missing (not root: tests that need them are skipped)"; fi; fi

rattan:  ## the Rattan emulator, pinned, built with cargo when missing
	@command -v rattan >/dev/null && rattan --version | grep -q . || \
	  cargo install rattan --locked --version $(RATTAN_VERSION)

# eBPF congestion controls (ebpf/*.bpf.c, docs/hsrbbr.md), compiled against the running kernel's
# BTF. Skipped with a message when clang/bpftool/libbpf headers or BTF are missing.
EBPF_SRC := $(wildcard ebpf/*.bpf.c)
EBPF_OBJ := $(patsubst ebpf/%.bpf.c,ebpf/build/%.bpf.o,$(EBPF_SRC))
# hsrbbr's ablation variants (docs/hsrbbr.md): one -DHSRBBR_NO_<CHANGE> each
EBPF_VARIANTS := nomodel:NO_MODEL noprobe:NO_REPROBE noundo:NO_UNDO noloss:NO_LOSSKEEP
EBPF_OBJ += $(foreach v,$(EBPF_VARIANTS),ebpf/build/hsrbbr_$(word 1,$(subst :, ,$(v))).bpf.o)
BTF_VMLINUX := /sys/kernel/btf/vmlinux
# Checked when the recipe runs, not when make reads this file: on a fresh machine `make test`
# installs the toolchain (sysdeps) earlier in the same invocation.
ebpf:  ## eBPF congestion controls (hsrbbr) -> ebpf/build/*.bpf.o
	@if command -v clang >/dev/null && command -v bpftool >/dev/null && \
	  [ -f /usr/include/bpf/bpf_helpers.h ] && [ -f $(BTF_VMLINUX) ]; then \
	  $(MAKE) --no-print-directory $(EBPF_OBJ); \
	else echo "ebpf: skipped (needs clang, bpftool, libbpf-dev (make sysdeps) and $(BTF_VMLINUX))"; fi

ebpf/build/vmlinux.h:
	@mkdir -p ebpf/build
	bpftool btf dump file $(BTF_VMLINUX) format c > $@.tmp && mv $@.tmp $@

ebpf/build/%.bpf.o: ebpf/%.bpf.c ebpf/build/vmlinux.h
	clang -O2 -g -Wall -target bpf -D__TARGET_ARCH_x86 -Iebpf/build -c $< -o $@.tmp && mv $@.tmp $@

define EBPF_VARIANT_RULE
ebpf/build/hsrbbr_$(word 1,$(subst :, ,$(1))).bpf.o: ebpf/hsrbbr.bpf.c ebpf/build/vmlinux.h
	clang -O2 -g -Wall -target bpf -D__TARGET_ARCH_x86 -DHSRBBR_$(word 2,$(subst :, ,$(1))) -Iebpf/build -c $$< -o $$@.tmp && mv $$@.tmp $$@
endef
$(foreach v,$(EBPF_VARIANTS),$(eval $(call EBPF_VARIANT_RULE,$(v))))

REPORT_JS := python/hsrtcp/report/js
UPLOT := $(REPORT_JS)/node_modules/uplot/dist/uPlot.iife.min.js

# `hsrtcp report` inlines uPlot from node_modules (pinned by package-lock.json, not committed).
report-js:  ## uPlot for hsrtcp report (npm ci in python/hsrtcp/report/js when missing)
	@if [ ! -d $(REPORT_JS)/node_modules ]; then \
	  if command -v npm >/dev/null; then cd $(REPORT_JS) && npm ci --omit=dev --no-audit --no-fund; \
	  else echo "warning: npm missing: hsrtcp report needs 'npm ci --omit=dev' in $(REPORT_JS) (Node.js)"; fi; fi

build: venv report-js  ## build the native extension into the venv (release); npm installs the report's uPlot
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release -q
	@# Bytecode ahead of time: PYTHONDONTWRITEBYTECODE=1 machines would recompile at every start.
	$(VENV)/bin/python -m compileall -q python/hsrtcp

# The sdist, then the wheel built from that sdist (proof that the sdist builds): abi3,
# manylinux-tagged by maturin's check of the library. It is unpacked outside the repository (in
# it, the repository's .gitignore would hide the files from maturin) and writes its build record
# (the commit, for `hsrtcp --version`) there. CARGO_TARGET_DIR=target/: the dependencies are
# not built again; tar -m dates the unpacked sources now (the sdist's are from 2006), so cargo
# compiles hsrtcp's own crates from them instead of taking the artifacts of another build.
WHEELS := target/wheels
wheel: venv report-js  ## sdist and abi3 wheel (built from the sdist) -> target/wheels/
	@[ -f $(UPLOT) ] || { echo "error: $(UPLOT) missing: the wheel would lack the report's charts (make report-js needs npm)"; exit 1; }
	rm -rf $(WHEELS) && mkdir -p $(WHEELS)
	$(VENV)/bin/maturin sdist --out $(WHEELS)
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  tar -xzmf $(WHEELS)/hsrtcp-*.tar.gz -C "$$tmp"; src=$$(echo "$$tmp"/hsrtcp-*); \
	  dirty=false; [ -z "$$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=true; \
	  printf '{"commit": "%s", "dirty": %s}\n' "$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" \
	    $$dirty > "$$src/python/hsrtcp/_build.json"; \
	  cd "$$src" && CARGO_TARGET_DIR=$(abspath target) $(abspath $(VENV))/bin/maturin build --release \
	    -i $(abspath $(PY)) --out $(abspath $(WHEELS))

# The packaging smoke test: the wheel in a new venv outside the repository, run from a directory
# without the repository's files: hsrtcp --version, doctor, demo, analyze on a packaged example,
# report, query (tests/python/packaging/test_wheel.py; it also checks the sdist's contents).
test-packaging: wheel  ## install the built wheel in a fresh venv elsewhere and run the demo there
	HSRTCP_WHEELS=$(abspath $(WHEELS)) $(PY) -m pytest -q tests/python/packaging/test_wheel.py

# The documentation site (mkdocs.yml): its own venv, so the test venv stays lean. --strict
# turns every warning (a broken link or anchor, a page missing from the nav or from docs/) into
# an error.
DOCS_VENV := .venv-docs
DOCS_DEPS := 'mkdocs>=1.6' 'mkdocstrings[python]>=0.26'
$(DOCS_VENV)/.deps: pyproject.toml
	$(VENV_PYTHON) -m venv $(DOCS_VENV) || python3 -m venv --clear $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install -q $(DOCS_DEPS)
	touch $@

# The numbers of docs/study.md and docs/findings.md: their generated regions rewritten from the
# committed data (tests/data/study*/, docs/findings/arms.csv; python/hsrtcp/docsgen.py).
docs-data: build  ## rewrite the generated regions of docs/ from the committed data (needs the package built)
	$(PY) -m hsrtcp.docsgen
	$(PY) -m hsrtcp.figures.committed

docs: docs-data $(DOCS_VENV)/.deps  ## the documentation site -> target/site (warnings are errors)
	$(DOCS_VENV)/bin/mkdocs build --strict --quiet

docs-serve: $(DOCS_VENV)/.deps  ## serve the documentation site on localhost:8000 while editing
	$(DOCS_VENV)/bin/mkdocs serve

demo: build  ## analyze the bundled example (python/hsrtcp/examples/) into out/
	$(VENV)/bin/hsrtcp demo -o out

# tests/data/golden/tables.json: digests of every table of every tests/data run, which
# tests/python/golden checks. Only with an explained behaviour change (docs/testing.md).
golden: build  ## rewrite the golden table digests from this build (explain the change in the commit)
	$(PY) -m hsrtcp.testing.golden --update

test-rust:  ## Rust unit tests
	cargo test --release -q -p hsrtcp-core

# The wheel and the docs venv first: tests/python/packaging runs the wheel in a fresh venv and
# builds the site.
test-python: build sysdeps rattan ebpf wheel $(DOCS_VENV)/.deps  ## Python tests (root-only tests run when root), the wheel's smoke test among them
	HSRTCP_WHEELS=$(abspath $(WHEELS)) $(PY) -m pytest -q

test: test-rust test-python docs  ## everything CI runs

bench: build sysdeps  ## speed and memory against tcptrace and tshark, one run (+ reader timing, lab path)
	cargo test --release -q -p hsrtcp-core --test read_decode_speed -- --ignored --nocapture
	$(PY) bench/run.py
	$(PY) bench/run.py --packets --out bench/results-packets.json
	$(PY) bench/run.py --pair --out bench/results-pair.json
	$(PY) bench/run.py --capture bench/work/mptcp.pcap --out bench/results-mptcp.json --skip tshark
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) bench-lab; else echo "lab bench skipped (needs root)"; fi
	$(MAKE) bench-corpus
	$(MAKE) bench-gsmtap
	$(MAKE) bench-study
	$(MAKE) bench-consumers
	$(MAKE) bench-report

bench-report: build  ## the report of the bench capture's flow (every packet): HTML size, paint time in headless Chromium (bench/README.md)
	$(PY) bench/report_paint.py

bench-study: build  ## hsrtcp study on 1 M connections (streamed, in-memory, Dask) and 10 M streamed: peak RSS, wall (bench/README.md)
	$(PY) bench/study_scale.py --flows 1000000 --only stream memory dask --out bench/results-study-1m.json
	$(PY) bench/study_scale.py --flows 10000000 --only stream --out bench/results-study.json

bench-corpus: build  ## corpus runs: 1 vs 2 workers, Dask overhead, RSS per worker, GB/CPU-minute (bench/README.md)
	$(PY) bench/corpus.py --singles 16 --pairs 16 --rounds 8

bench-gsmtap: build  ## GSMTAP radio log: 1 M RRC messages read in bounded memory, messages/s (bench/README.md)
	$(PY) bench/gsmtap_bench.py --messages 1000000 --rounds 3

bench-consumers: build  ## model fit on 1 M flows, radio reader on 2 M/10 M lines and a 1 GB line against the code before issue 32; `hsrtcp analyze --radio` on a 1 GB log against s14's (bench/README.md)
	$(PY) bench/scale_consumers.py
	$(PY) bench/scale_consumers.py --radio-lines 15000000 --radio-analyze 15000000 --baseline bccc85a \
	  --skip-fit --skip-report --skip-reader --out bench/results-consumers-radio-analyze.json

bench-lab: build sysdeps rattan  ## emulated 100 Mbit/s path: rate, loss, TCP_INFO sampling (root)
	$(PY) bench/lab_bench.py

fixtures: build sysdeps  ## regenerate tests/data and python/hsrtcp/examples/ with the netns testbed (root; drops are random)
	$(PY) scripts/make_fixtures.py && $(PY) scripts/make_example.py

# Lab campaigns in parallel (a quiet lab, docs/lab.md): a shard pins its emulator and its
# endpoints to two cores of their own and one core is left to the rest of the machine, so
# the default is (cores - 1) / 2 shards, at least 1 (one on a 2-core machine).
LAB_SHARDS := $(shell n=$$(nproc 2>/dev/null || echo 1); s=$$(( (n - 1) / 2 )); echo $$(( s < 1 ? 1 : s )))

# The study campaign (docs/study.md): run it, its 20 more trips with handoffs and its static
# extension (24 more standing-train downloads for the static timeouts of §9 item 7), each as
# STUDY_SHARDS processes at once (root, 174 runs of ~95 s: ~45 min at 6 shards, ~4.5 h as
# one; an interrupted campaign continues), analyze every bundle not marked noisy (ran above
# the campaign's load bound; STUDY_INCLUDE_NOISY=1 keeps them; python -m
# hsrtcp.findings.runs lists them) into its own results directory, group main + handoff
# trips (pooled and by workload) and all three, and check the seeds' orderings: items 1, 3,
# 4 on main + handoff trips, item 7 on all three (docs/study.md). --min-flows 5: the
# orderings were registered on, and tests/data/study* committed from, tables where a cell
# of fewer than 5 flows is null; hsrtcp study's default (1) would give such cells a point
# estimate.
STUDY_OUT ?= out/study
STUDY_MIN_FLOWS ?= 5
STUDY_SHARDS ?= $(LAB_SHARDS)
STUDY_INCLUDE_NOISY ?=
# the results directories of a campaign's listed bundles that were analyzed
study-results = $$(while read -r b; do d=$(STUDY_OUT)/$(1)/$$(basename $$b); [ -d $$d ] && echo $$d; done \
  < $(STUDY_OUT)/$(1).list)
study: build sysdeps rattan  ## study campaign (root, ~45 min at 6 shards, ~4.5 h as one) -> analyze bundles -> hsrtcp study tables in out/study/
	@for c in study:runs study-handoff-trips:runs-handoffs study-static-timeouts:runs-static; do pids=""; \
	  for k in $$(seq 0 $$(($(STUDY_SHARDS) - 1))); do \
	  $(PY) -m hsrtcp campaign campaigns/$${c%%:*}.toml -o $(STUDY_OUT)/$${c##*:} \
	    --shard $$k/$(STUDY_SHARDS) --no-progress & pids="$$pids $$!"; done; \
	  for p in $$pids; do wait $$p || echo "warning: some runs of $${c%%:*} failed (see their manifest.json)"; done; done
	@set -e; for c in runs:results runs-handoffs:results-handoffs runs-static:results-static; do \
	  $(PY) -m hsrtcp.findings.runs $(STUDY_OUT)/$${c%%:*} $(if $(STUDY_INCLUDE_NOISY),--include-noisy) \
	    > $(STUDY_OUT)/$${c##*:}.list; \
	  while read -r b; do r=$(STUDY_OUT)/$${c##*:}/$$(basename $$b); \
	  [ -f $$r/context.parquet ] || $(PY) -m hsrtcp analyze $$b -o $$r -q --no-plot || echo "warning: $$b not analyzed"; \
	  done < $(STUDY_OUT)/$${c##*:}.list; done
	$(PY) -m hsrtcp study $(call study-results,results) $(call study-results,results-handoffs) \
	  -o $(STUDY_OUT)/tables --min-flows $(STUDY_MIN_FLOWS)
	$(PY) -m hsrtcp study $(call study-results,results) $(call study-results,results-handoffs) \
	  -o $(STUDY_OUT)/tables-by-workload --by workload --min-flows $(STUDY_MIN_FLOWS)
	$(PY) -m hsrtcp study $(call study-results,results) $(call study-results,results-handoffs) \
	  $(call study-results,results-static) -o $(STUDY_OUT)/tables-with-static --min-flows $(STUDY_MIN_FLOWS)
	$(PY) -m hsrtcp.study.orderings $(STUDY_OUT)/tables $(STUDY_OUT)/tables-with-static \
	  $(STUDY_OUT)/tables-by-workload   # docs/metrics.md §3 items 1, 3, 4, 7

# The mitigation study of issue 21 (docs/findings.md): the campaign, its A/A noise campaign and
# two knobs on bbr (root; 225 + 25 + 50 runs of ~30 s, ~85 min as 2 processes at once, ~2.5 h
# as one: FINDINGS_SHARDS, each whole seed x scenario blocks; an interrupted campaign
# continues), every bundle analyzed into its own results directory, then the paired effects,
# tables, figures and checks.csv; noisy runs (above the campaigns' load bound) are left out
# of their pairs unless FINDINGS_INCLUDE_NOISY=1. It regenerates docs/findings/ (arms.csv,
# effects.csv, causes.csv, the figures) into out/findings/report (docs/findings.md, "Regenerate").
FINDINGS_OUT ?= out/findings
FINDINGS_SHARDS ?= $(LAB_SHARDS)
FINDINGS_INCLUDE_NOISY ?=
findings: build sysdeps rattan ebpf  ## mitigation study (root, ~85 min at 2 shards, ~2.5 h as one) -> analyze bundles -> effects, tables, figures in out/findings/report
	@for c in mitigations mitigations-aa mitigations-bbr; do pids=""; for k in $$(seq 0 $$(($(FINDINGS_SHARDS) - 1))); do \
	  $(PY) -m hsrtcp campaign campaigns/$$c.toml -o $(FINDINGS_OUT)/$$c --shard $$k/$(FINDINGS_SHARDS) \
	    --no-progress & pids="$$pids $$!"; done; \
	  for p in $$pids; do wait $$p || echo "warning: some runs of $$c failed (see their manifest.json)"; done; done
	@for b in $(FINDINGS_OUT)/mitigations/[0-9]*/ $(FINDINGS_OUT)/mitigations-aa/[0-9]*/ \
	  $(FINDINGS_OUT)/mitigations-bbr/[0-9]*/; do \
	  r=$(FINDINGS_OUT)/results/$$(basename $$b); \
	  [ -f $$r/flows.parquet ] || $(PY) -m hsrtcp analyze $$b -o $$r -q --no-plot || echo "warning: $$b not analyzed"; done
	$(PY) -m hsrtcp.findings $(FINDINGS_OUT)/mitigations $(FINDINGS_OUT)/results \
	  --also-runs $(FINDINGS_OUT)/mitigations-aa --also-runs $(FINDINGS_OUT)/mitigations-bbr -o $(FINDINGS_OUT)/report \
	  $(if $(FINDINGS_INCLUDE_NOISY),--include-noisy)

# Fuzzing (fuzz/README.md): each target alone for FUZZ_SECONDS, from the committed seeds
# (fuzz/seeds/<target>, read only) plus the corpus it grows (fuzz/corpus/<target>, ignored).
# Crashes land in fuzz/artifacts/<target>/. Long by design: not part of `make test` or CI.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := decode reader engine pair pair_output
fuzz-run = mkdir -p fuzz/corpus/$(1) && cd fuzz && cargo +nightly fuzz run $(1) corpus/$(1) seeds/$(1) -- -max_total_time=$(FUZZ_SECONDS) -timeout=60

fuzz: $(addprefix fuzz-,$(FUZZ_TARGETS))  ## every fuzz target in turn, FUZZ_SECONDS (600) each
fuzz-tools:  ## cargo-fuzz and the nightly toolchain the fuzz targets need
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
fuzz-decode: fuzz-tools  ## fuzz one frame through the decoder for FUZZ_SECONDS
	$(call fuzz-run,decode)
fuzz-reader: fuzz-tools  ## fuzz the capture reader (pcap, pcapng, gzip) for FUZZ_SECONDS
	$(call fuzz-run,reader)
fuzz-engine: fuzz-tools  ## fuzz a capture through the single-capture analysis for FUZZ_SECONDS
	$(call fuzz-run,engine)
fuzz-pair: fuzz-tools  ## fuzz two captures through the two-vantage matcher for FUZZ_SECONDS
	$(call fuzz-run,pair)
fuzz-pair_output: fuzz-tools  ## fuzz two captures through the core's pair output (join, Parquet tables) for FUZZ_SECONDS
	$(call fuzz-run,pair_output)
fuzz-seeds:  ## regenerate the committed fuzz seeds (scripts/make_fuzz_seeds.py)
	python3 scripts/make_fuzz_seeds.py

clean:  ## remove build outputs
	rm -rf target out $(VENV) $(DOCS_VENV) ebpf/build
