# Makefile: the README's two commands (`make demo`, `make test`) and the steps under them.
.PHONY: deps build demo test test-repeat bench fuzz proto install uninstall deb deb-check clean

# Where `make install` puts route: /usr/local as root, else ~/.local.
PREFIX ?= $(shell [ "$$(id -u)" -eq 0 ] && echo /usr/local || echo $$HOME/.local)

deps:
	scripts/deps build

build: deps
	swift build

# Installs what is missing, builds, and casts a generated sample to "This computer".
demo: build
	scripts/demo

# Installs what is missing and runs every test inside labs (private network namespaces): groups of suites at once,
# each group in a lab of its own and with a deadline (scripts/test-suites --help).
test:
	scripts/deps test
	swift build --build-tests
	.build/debug/route-fuzz --runs 3000
	@# GStreamer's plugin registry, built once here rather than by the first dozens of test processes at once.
	gst-inspect-1.0 coreelements >/dev/null
	scripts/test-suites </dev/null

# Runs one suite (or group, or test) N times in a row, each in a fresh lab, to hunt flakes:
# make test-repeat SUITE=CastLabTests N=10
test-repeat:
	scripts/deps test
	swift build --build-tests
	gst-inspect-1.0 coreelements >/dev/null
	scripts/test-suites --repeat $(or $(N),5) $(SUITE) </dev/null

bench:
	scripts/deps bench
	swift build -c release
	bench/serve
	bench/plugins

# Installs route, its bundled plugins (route-provider-*), route(1) and bash/zsh/fish completions under PREFIX.
install:
	scripts/deps build
	swift build -c release
	scripts/install --prefix $(PREFIX) --from .build/release

uninstall:
	scripts/install --prefix $(PREFIX) --uninstall

# route_VERSION_amd64.deb here: every executable with Swift's runtime and Foundation linked statically, Depends from
# dpkg-shlibdeps, lintian-clean (scripts/deb). Then: apt install ./route_*.deb
deb:
	scripts/deps deb
	scripts/deb

# Installs the .deb in a Debian 12 root without Swift and checks it from the installed files, casts in the lab
# included (scripts/deb-check).
deb-check: deb
	scripts/deb-check

# Regenerates the Cast v2 CastMessage code from its .proto with protoc-c (protobuf-c-compiler); the output is committed.
proto:
	command -v protoc-c >/dev/null || apt-get install -y -qq --no-install-recommends protobuf-c-compiler
	cd Sources/CCastMessage && protoc-c --c_out=. cast_channel.proto && mv cast_channel.pb-c.h include/ && \
		sed -i 's|#include "cast_channel.pb-c.h"|#include "include/cast_channel.pb-c.h"|' cast_channel.pb-c.c

# Every parser of network input under libFuzzer and AddressSanitizer, a million inputs each (RUNS=...).
fuzz:
	scripts/deps build
	scripts/fuzz

clean:
	rm -rf --one-file-system .build out route_*_amd64.deb route_*_amd64.buildinfo route_*_amd64.changes
