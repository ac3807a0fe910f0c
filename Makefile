# gflow — a thin wrapper over Meson; see README.md.
#   make            build (build/)
#   make test       install missing packages, build with gcc, clang and
#                   ASan+UBSan, run unit and end-to-end tests, then the
#                   package test (make test-package)
#   make run        build and run the daemon in the foreground with a demo job
#   make bench      run the benchmarks, write docs/benchmarks.md (SLURM_UP=1:
#                   with a local Slurm started by bench/slurm-up.sh for the run)
#   make bench-quick the benchmarks at small sizes, 2 runs, printed (< 2 min)
#   make fuzz       run each fuzz target for FUZZ_SECS seconds (clang)
#   make install    install to PREFIX (default ~/.local)
#   make deb        build the Debian package into deb/ (debian/, dpkg-buildpackage)
#   make test-package  build the package, install it, use it as an admin
#                   would, purge it (root; tests/package/)
# Each target installs only the Debian packages it needs (scripts/deps.sh):
# building and running need no test tool.

PREFIX ?= $(HOME)/.local
BUILD ?= build
FUZZ_SECS ?= 60
BENCH_OPTS ?=
BENCH_DEPS = bench
ifeq ($(SLURM_UP),1)
BENCH_OPTS += --slurm-up
BENCH_DEPS += slurm
endif
MESON_OPTS ?=

.PHONY: all deps deps-test deps-bench deps-deb test test-package run bench bench-quick fuzz install deb clean

all: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

deps:
	@scripts/deps.sh run

deps-test:
	@scripts/deps.sh run test

deps-bench:
	@scripts/deps.sh run $(BENCH_DEPS)

deps-deb:
	@scripts/deps.sh run deb

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

test: deps-test
	scripts/test.sh

test-package: deps-test
	scripts/test-package.sh

run: all
	scripts/run-demo.sh $(BUILD)

bench: deps-bench all
	GFLOW_BENCH_INSTALL_TSP=$${GFLOW_BENCH_INSTALL_TSP:-1} bench/run.sh $(BUILD) $(BENCH_OPTS)

bench-quick: deps-bench all
	/usr/bin/python3 bench/bench.py --build $(BUILD) --quick --runs 2 $(BENCH_OPTS)

fuzz: deps-test
	scripts/fuzz.sh $(FUZZ_SECS)

install: deps
	meson setup build-install --prefix=$(PREFIX) --buildtype=release -Dwerror=true
	ninja -C build-install install

deb: deps-deb
	scripts/deb.sh

clean:
	rm -rf build build-clang build-asan build-release build-fuzz build-install deb
