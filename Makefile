# Thin wrapper over CMake presets. A newcomer needs only `make demo` and `make check`.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: all release deps check dev test demo bench fuzz stress clean format lint install

all: release

deps:
	@scripts/install-deps

release: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

dev: deps
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)

# Every test, under AddressSanitizer and UndefinedBehaviorSanitizer. The release build is
# compiled too (-O2 finds warnings -O1 does not), so that `make demo` and `make bench` work.
check: dev
	@scripts/install-test-deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) >/dev/null
	@cd build/dev && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test: check

demo: release
	@scripts/demo

bench: release
	@scripts/install-test-deps
	@scripts/bench

fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@scripts/fuzz $(FUZZ_SECONDS)

stress: dev
	@scripts/install-test-deps
	@TM_STRESS=1 scripts/stress

# Installs bin/tidemark (the front), libexec/tidemark/tidemark-core (the runtime)
# and lib/libduckdb.so under PREFIX (the runtime finds the library through its
# rpath, $ORIGIN/../../lib).
PREFIX ?= /usr/local
install: release
	@cmake --install build/release --prefix $(PREFIX)

lint:
	@scripts/check-layers src && scripts/lint src

format:
	@clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h')

clean:
	rm -rf build
