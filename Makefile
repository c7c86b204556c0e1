# Makefile: the README's two commands (`make demo`, `make test`) and the steps under them.
.PHONY: deps build demo test bench fuzz clean

deps:
	scripts/deps build

build: deps
	swift build

# Installs what is missing, builds, and casts a generated sample to "This computer".
demo: build
	scripts/demo

# Installs what is missing and runs every test inside the lab (private network namespaces).
test:
	scripts/deps test
	swift build --build-tests
	.build/debug/route-fuzz --runs 3000
	scripts/lab run swift test --skip-build

bench:
	scripts/deps bench
	swift build -c release
	bench/serve

# Every parser of network input under libFuzzer and AddressSanitizer, a million inputs each (RUNS=...).
fuzz:
	scripts/deps build
	scripts/fuzz

clean:
	rm -rf .build out
