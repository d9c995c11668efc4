# sinkscope - plain GNU make; objects out of tree; pkg-config for every library.
#
#   make            programs into bin/
#   make check      every test; ends with "N passed, N failed"
#   make sanitize   ASan+UBSan build running the same tests
#   make bench      benchmarks (long; not part of check)
#   make deps       install the Debian packages (apt-get when root)
#   make install    PREFIX, DESTDIR

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
BINDIR  ?= bin
CC      ?= cc
PKGS    := hdf5 openblas lapacke yaml-0.1 jansson yajl libpcre2-8 libutf8proc
OPT     ?= -O2 -g
# baseline x86-64; files named *_avx2.c, *_avx512.c, *_avx512bf16.c, *_amx.c
# are compiled for that level and chosen at run time (src/lib/util/cpu.h)
ISA_avx2       := -mavx2 -mfma -mf16c
ISA_avx512     := $(ISA_avx2) -mavx512f -mavx512bw -mavx512vl -mavx512dq
ISA_avx512bf16 := $(ISA_avx512) -mavx512bf16
ISA_amx        := $(ISA_avx512bf16) -mamx-tile -mamx-bf16
isa = $(ISA_$(lastword $(subst _, ,$(notdir $(basename $<)))))
CFLAGS  ?= $(OPT)
SS_CFLAGS  = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Isrc/lib -pthread \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
# oneDNN (engine/matmul.c): Debian's libdnnl-dev ships no pkg-config file;
# it is built with OpenMP (libgomp), whose thread count matmul.c sets.
DNNL_LIBS  = -ldnnl -lgomp
SS_LDLIBS  = $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(DNNL_LIBS) -lm -pthread
TEST_LIBS  = $(shell pkg-config --libs cmocka 2>/dev/null)

PROGS    := $(patsubst src/cmd/%.c,%,$(wildcard src/cmd/*.c))
LIB_SRC  := $(wildcard src/lib/*/*.c)
LIB_OBJ  := $(patsubst src/lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC))
LIB      := $(BUILD)/libsinkscope.a
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNITS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOLS    := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))
MAN1     := $(wildcard man/man1/*.1)
MAN5     := $(wildcard man/man5/*.5)
MAN7     := $(wildcard man/man7/*.7)

DEPS_DEBIAN := build-essential pkg-config libhdf5-dev hdf5-tools libopenblas-dev liblapacke-dev \
  libyaml-dev libjansson-dev libyajl-dev libpcre2-dev libutf8proc-dev libcmocka-dev libdnnl-dev \
  python3-torch python3-numpy python3-h5py python3-sklearn python3-pandas slurm-wlm munge \
  mandoc gnuplot-nox libxml2-utils valgrind clang libclang-rt-14-dev xz-utils bc bsdextrautils jq

.SECONDARY:
.PHONY: all check sanitize bench deps install uninstall clean demo fuzz tools units
all: $(addprefix $(BINDIR)/,$(PROGS)) tools

tools: $(TOOLS)
units: $(UNITS)

$(BUILD)/lib/%.o: src/lib/%.c
	@mkdir -p $(@D)
	$(CC) $(SS_CFLAGS) $(CFLAGS) $(isa) -c $< -o $@

# the thread pool is an OpenMP region: the team oneDNN's products run on
$(BUILD)/lib/util/pool.o $(BUILD)/tests/test_pool.o $(BUILD)/lib/engine/matmul.o: SS_CFLAGS += -fopenmp

$(BUILD)/prog/%.o: src/cmd/%.c
	@mkdir -p $(@D)
	$(CC) $(SS_CFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/tools/%.o: tests/tools/%.c
	@mkdir -p $(@D)
	$(CC) $(SS_CFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(SS_CFLAGS) $(shell pkg-config --cflags cmocka) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BINDIR)/%: $(BUILD)/prog/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(SS_LDLIBS)

$(BUILD)/tools/%: $(BUILD)/tools/%.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(SS_LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(SS_LDLIBS) $(TEST_LIBS)

# Tests: unit tests (cmocka, TAP output) and scripts in tests/cli, tests/ref,
# tests/e2e, tests/fault; tests/run totals them.
check: deps all $(UNITS)
	@SS_BIN=$(abspath $(BINDIR)) SS_BUILD=$(abspath $(BUILD)) tests/run

SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
sanitize:
	$(MAKE) BUILD=build/san BINDIR=build/san/bin CFLAGS="$(SAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined" all units
	@SS_SANITIZE=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  SS_BIN=$(abspath build/san/bin) SS_BUILD=$(abspath build/san) tests/run

bench: all
	@SS_BIN=$(abspath $(BINDIR)) SS_BUILD=$(abspath $(BUILD)) tests/bench/run

# Not part of bench: llama.cpp (the release inside the npm package
# node-llama-cpp, built once into $(BUILD)/peers) against actdump on the
# bench model as GGUF, interleaved (tests/bench/peers/run.sh).
.PHONY: bench-peers
bench-peers: all
	@SS_BIN=$(abspath $(BINDIR)) SS_BUILD=$(abspath $(BUILD)) bash tests/bench/peers/run.sh

# Not part of bench: a random model with Qwen2.5-14B's shapes (29.5 GB, into
# $(BUILD)/bench, deleted afterwards unless KEEP=1) through actdump, to show
# that a model larger than memory runs (tests/bench/big/actdump.sh).
.PHONY: bench-big
bench-big: all
	@SS_BIN=$(abspath $(BINDIR)) SS_BUILD=$(abspath $(BUILD)) SS_ROOT=$(CURDIR) SINKSCOPE_NO_PROGRESS=1 \
	  KEEP=$(KEEP) bash tests/bench/big/actdump.sh

demo: deps all
	@examples/demo.sh

deps:
	@missing=$$(for p in $(DEPS_DEBIAN); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all Debian packages present"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "deps: missing packages; run as root:"; echo "  apt-get install -y $$missing"; exit 1; fi

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(addprefix $(BINDIR)/,$(PROGS)) $(DESTDIR)$(PREFIX)/bin/
	$(if $(MAN1),install -m 644 $(MAN1) $(DESTDIR)$(PREFIX)/share/man/man1/)
	$(if $(MAN5),install -m 644 $(MAN5) $(DESTDIR)$(PREFIX)/share/man/man5/)
	$(if $(MAN7),install -m 644 $(MAN7) $(DESTDIR)$(PREFIX)/share/man/man7/)
	install -d $(DESTDIR)$(PREFIX)/share/sinkscope/qwen3
	install -m 644 tests/data/tokenizers/qwen3/tokenizer.json tests/data/tokenizers/qwen3/tokenizer_config.json \
	  $(DESTDIR)$(PREFIX)/share/sinkscope/qwen3/
	sed 's#^\( *tokenizer: *\).*/qwen3/tokenizer.json#\1qwen3/tokenizer.json#' examples/organism.yaml \
	  >$(DESTDIR)$(PREFIX)/share/sinkscope/organism.yaml

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(PROGS)) \
	  $(addprefix $(DESTDIR)$(PREFIX)/share/man/man1/,$(notdir $(MAN1))) \
	  $(addprefix $(DESTDIR)$(PREFIX)/share/man/man5/,$(notdir $(MAN5))) \
	  $(addprefix $(DESTDIR)$(PREFIX)/share/man/man7/,$(notdir $(MAN7)))
	rm -rf $(DESTDIR)$(PREFIX)/share/sinkscope

clean:
	rm -rf $(BUILD) $(BINDIR)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# Fuzzing (tests/fuzz/, see tests/fuzz/run): libFuzzer harnesses built with
# clang, run by `make fuzz FUZZ_SECONDS=N`; the same harnesses are built
# with $(CC) as plain replay programs that make check runs on
# tests/fuzz/regress/ (every crash ever found) and the seeds.
FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 8
FUZZ_FLAGS   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     := $(patsubst tests/fuzz/fuzz_%.c,$(BUILD)/fuzz/fuzz_%,$(FUZZ_SRC))
FUZZ_REPLAY  := $(patsubst tests/fuzz/fuzz_%.c,$(BUILD)/fuzz-replay/%,$(FUZZ_SRC))
FUZZ_LIBOBJ  := $(patsubst src/lib/%.c,$(BUILD)/fuzz/lib/%.o,$(LIB_SRC))

$(BUILD)/fuzz/lib/%.o: src/lib/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(SS_CFLAGS) $(FUZZ_FLAGS) $(isa) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/libsinkscope-fuzz.a: $(FUZZ_LIBOBJ)
	rm -f $@
	ar rcs $@ $^
$(BUILD)/fuzz/obj/%.o: tests/fuzz/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(SS_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -Itests/fuzz -c $< -o $@
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/obj/fuzz_%.o $(BUILD)/fuzz/libsinkscope-fuzz.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(SS_LDLIBS)
$(BUILD)/fuzz-replay/obj/%.o: tests/fuzz/%.c
	@mkdir -p $(@D)
	$(CC) $(SS_CFLAGS) $(CFLAGS) -Itests/fuzz -c $< -o $@
$(BUILD)/fuzz-replay/%: $(BUILD)/fuzz-replay/obj/fuzz_%.o $(BUILD)/fuzz-replay/obj/replay.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(SS_LDLIBS)

fuzz: $(FUZZ_BIN)
	@tests/fuzz/run $(FUZZ_SECONDS) $(FUZZ_BIN)
check: $(FUZZ_REPLAY)
units: $(FUZZ_REPLAY)

# The model organism (mkorganism(1)): generated on demand, never committed.
.PHONY: organism
organism: examples/organism/config.json
examples/organism/config.json: $(BINDIR)/mkorganism examples/organism.yaml
	$(BINDIR)/mkorganism -o examples/organism examples/organism.yaml
