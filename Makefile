# ngx_http_tent_module: build, demo, tests.  See README.md.

BUILD       ?= build
MODULE       = $(BUILD)/ngx_http_tent_module.so
ASAN_BUILD   = build-asan
NGINX       ?= /usr/sbin/nginx
PROVE_JOBS  ?= 1
# more than one job: each test file its own free port and server root
RANDOMIZE    = $(if $(filter 1,$(PROVE_JOBS)),,1)
# a suite, an area's folder (t/posts/), or t/ for all of them and the
# harness self-tests: prove -r finds the folders (docs/testing.md)
TESTS       ?= t/

SRCS = $(wildcard src/*/*.c src/*/*.h) config

.PHONY: all build deps test-deps run stop test test-asan test-valgrind \
        test-hup lint bench bench-deps fuzz fuzz-long clean deb deb-test

all: build

deps:
	@util/install-deps.sh

test-deps:
	@util/install-deps.sh --test

$(MODULE): $(SRCS)
	@util/build.sh $(BUILD)

build: deps $(MODULE)

# the demo: nginx with a demo entity on 127.0.0.1:$(DEMO_PORT)
DEMO_PORT ?= 8080

run: build
	@util/run-demo.sh start $(DEMO_PORT)

stop:
	@util/run-demo.sh stop

test: test-deps $(MODULE)
	@BUILD=$(BUILD) util/lint.sh
	@t/unit/run.sh
	TEST_NGINX_BINARY=$(NGINX) \
	TEST_NGINX_LOAD_MODULES=$(CURDIR)/$(MODULE) \
	TEST_NGINX_RANDOMIZE=$(RANDOMIZE) \
	    util/prove.sh -j$(PROVE_JOBS) -It/lib -r $(TESTS)

# the suites again, with the module built with AddressSanitizer
test-asan: test-deps
	@util/build.sh $(ASAN_BUILD) \
	    "-fsanitize=address,undefined -fno-omit-frame-pointer"
	TEST_NGINX_RANDOMIZE=$(RANDOMIZE) PROVE_JOBS=$(PROVE_JOBS) \
	util/run-asan.sh $(CURDIR)/$(ASAN_BUILD)/ngx_http_tent_module.so $(TESTS)

test-valgrind: test-deps $(MODULE)
	TEST_NGINX_BINARY=$(NGINX) \
	TEST_NGINX_LOAD_MODULES=$(CURDIR)/$(MODULE) \
	TEST_NGINX_USE_VALGRIND=1 \
	    util/prove.sh -It/lib -r $(TESTS)

# every block run through "nginx -s reload" instead of restarts
test-hup: test-deps $(MODULE)
	TEST_NGINX_BINARY=$(NGINX) \
	TEST_NGINX_LOAD_MODULES=$(CURDIR)/$(MODULE) \
	TEST_NGINX_USE_HUP=1 \
	    util/prove.sh -It/lib -r $(TESTS)

# the layers' calls are read from the objects: built first
lint: $(MODULE)
	@BUILD=$(BUILD) util/lint.sh

# the Debian package (docs/packaging.md): build-deb/*.deb, and its
# install into a throwaway Debian 12 root with nginx
deb:
	@util/install-deps.sh --deb
	@util/deb.sh build

deb-test: deb
	@util/deb.sh test

FUZZ_SECONDS ?= 5

# every fuzz target a few seconds: the smoke run CI does (docs/fuzzing.md)
fuzz: test-deps $(MODULE)
	fuzz/run.sh $(FUZZ_SECONDS)

# every target to 10M executions (30 minutes at most each), in two
# halves side by side (one per core): some 25 minutes on 2 cores
FUZZ_HALF1 = fuzz_fetch fuzz_type fuzz_ipc fuzz_mac fuzz_guard fuzz_url \
             fuzz_keys fuzz_apmap
FUZZ_HALF2 = fuzz_form fuzz_store fuzz_apps fuzz_multipart fuzz_links \
             fuzz_route fuzz_post fuzz_httpsig

fuzz-long: test-deps $(MODULE)
	fuzz/build.sh && mkdir -p fuzz/out
	FUZZ_RUNS=10000000 fuzz/run.sh 1800 $(FUZZ_HALF1) > fuzz/out/half1.txt \
	    2>&1 & pid=$$!; \
	FUZZ_RUNS=10000000 fuzz/run.sh 1800 $(FUZZ_HALF2); rc=$$?; \
	wait $$pid; rc1=$$?; cat fuzz/out/half1.txt; \
	[ $$rc -eq 0 ] && [ $$rc1 -eq 0 ]

bench-deps:
	@util/install-deps.sh --bench

# against plain nginx on 127.0.0.1, about 3 minutes (docs/bench.md)
bench: bench-deps $(MODULE)
	NGINX=$(NGINX) MODULE=$(CURDIR)/$(MODULE) bench/run-all.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) t/servroot* fuzz/bin fuzz/out
