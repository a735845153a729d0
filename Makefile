# murmur — build, test and benchmark.
#
#   make            build ./murmur (installs missing Debian packages when root)
#   make test       build and run every test (unit + end-to-end)
#   make data       fetch and prepare the Brown corpus into data/
#   make demo       the README's main job
#
# Sources are found by folder. Each room (base/ model/ gossip/ member/ net/ report/ plan/ node/ watch/)
# becomes one object in libmurmur.a, linked with `ld -r`, in which its
# internal names (mm__*) are made local: they cannot be reached from another
# room or a test, and `nm -g` of the library shows the public API only.
# cli/ (main.c, cmd_*.c, the shared flag table) is the murmur program, not the
# library.
# tests/test_*.c are one CMocka program each. Adding a file needs no edit
# here.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CPPFLAGS = -std=c11 -D_GNU_SOURCE -I. -MMD -MP
SANITIZE ?=
# State machines assert their transitions (connection states, a round's
# phases); the release build leaves the checks out, the sanitizer build
# (make test-sanitize) keeps them.
ASSERTS  ?= -DNDEBUG

DEB_PKGS = libuv1-dev libssl-dev libopenblas-dev libcmocka-dev libmicrohttpd-dev libjs-chart.js
PKGS     = libuv openssl cmocka
LIBS     = $(shell pkg-config --libs libuv openssl openblas libmicrohttpd 2>/dev/null || echo -luv -lssl -lcrypto -lopenblas -lmicrohttpd) -lm -lpthread
PKG_CFLAGS = $(shell pkg-config --cflags libuv openssl openblas libmicrohttpd 2>/dev/null)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

ALL_CFLAGS = $(CPPFLAGS) $(ASSERTS) $(PKG_CFLAGS) $(WARN) $(CFLAGS) $(SANITIZE) -pthread

ROOMS    = base model gossip member net report plan node watch
PROG_SRC = $(wildcard cli/*.c)
PROG_OBJ = $(PROG_SRC:%.c=$(BUILD)/%.o)
room_src = $(filter-out $(PROG_SRC),$(wildcard $(1)/*.c))
room_obj = $(patsubst %.c,$(BUILD)/%.o,$(call room_src,$(1)))
LIB_OBJ  = $(ROOMS:%=$(BUILD)/room-%.o)
TEST_SRC = $(wildcard tests/test_*.c)
TEST_BIN = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all deps test build-tests unit-tests e2e-tests data demo clean bench-model bench-gossip fuzz

all: deps murmur

# --- dependencies ------------------------------------------------------------
# Checks the Debian packages we build against; installs the missing ones when
# run as root, otherwise prints the exact command. Cheap enough to run always.
# ensure_pkgs: a shell snippet that installs the Debian packages given as its
# argument when missing (as root), or prints the apt-get line and fails.
# Fragments in mk/ use it for the packages only their targets need.
ensure_pkgs = missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "murmur: installing missing packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "murmur: missing packages. Run:  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

deps:
	@$(call ensure_pkgs,$(DEB_PKGS))

# --- build -------------------------------------------------------------------
murmur: $(PROG_OBJ) $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/libmurmur.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# One object per room, its mm__ names local (see the top of this file).
.SECONDEXPANSION:
$(BUILD)/room-%.o: $$(call room_obj,$$*)
	$(LD) -r -o $@.tmp $^
	objcopy --wildcard --localize-symbol='mm__*' $@.tmp $@
	@rm -f $@.tmp

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# A test may call a command in-process (test_data runs data-prepare), so the
# commands are linked in; main() is not.
TEST_LINK = $(filter-out $(BUILD)/cli/main.o,$(PROG_OBJ)) $(BUILD)/libmurmur.a
$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_LINK)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LIBS)

# Test objects are intermediate files to make; keep them for incremental builds.
.SECONDARY:

# --- tests -------------------------------------------------------------------
test: deps check-layers murmur $(TEST_BIN)
	@BUILD=$(BUILD) sh tests/run-tests.sh

# Everything `make test` runs, built (CI builds it with -j2 first, after
# `make deps`: the objects do not wait for deps, so -j2 wants deps done).
build-tests: murmur $(TEST_BIN)

clean:
	rm -rf $(BUILD) murmur

# Targets of one part each (data, benchmarks, fuzzing, ...).
include $(wildcard mk/*.mk)

# Every object's header dependencies (library, tests, tools, benchmarks), so
# a changed header rebuilds everything that includes it.
-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)
