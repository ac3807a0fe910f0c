# gflow — a thin wrapper over Meson; see README.md.
#   make            build (build/)
#   make test       install missing packages, build with gcc, clang and
#                   ASan+UBSan, run unit and end-to-end tests
#   make run        build and run the daemon in the foreground with a demo job
#   make bench      run the benchmarks, write docs/benchmarks.md (SLURM_UP=1:
#                   with a local Slurm started by bench/slurm-up.sh for the run)
#   make bench-quick the benchmarks at small sizes, 2 runs, printed (< 2 min)
#   make fuzz       run each fuzz target for FUZZ_SECS seconds (clang)
#   make install    install to PREFIX (default ~/.local)

PREFIX ?= $(HOME)/.local
BUILD ?= build
FUZZ_SECS ?= 60
BENCH_OPTS ?=
ifeq ($(SLURM_UP),1)
BENCH_OPTS += --slurm-up
endif
MESON_OPTS ?=

.PHONY: all deps test test-unit test-e2e test-sanitize run bench bench-quick fuzz install clean

all: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

test: deps
	scripts/test.sh

run: all
	scripts/run-demo.sh $(BUILD)

bench: all
	GFLOW_BENCH_INSTALL_TSP=$${GFLOW_BENCH_INSTALL_TSP:-1} bench/run.sh $(BUILD) $(BENCH_OPTS)

bench-quick: all
	/usr/bin/python3 bench/bench.py --build $(BUILD) --quick --runs 2 $(BENCH_OPTS)

fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECS)

install: deps
	meson setup build-install --prefix=$(PREFIX) --buildtype=release -Dwerror=true
	ninja -C build-install install

clean:
	rm -rf build build-clang build-asan build-release build-fuzz build-install
