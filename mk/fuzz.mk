# make fuzz        libFuzzer on the frame decoder for FUZZ_SECONDS (default 600)
# make fuzz-short  the same for 60 s (what CI runs)
# Needs clang with compiler-rt (libFuzzer). The corpus lives in build-fuzz/.
FUZZ_DIR     = build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_SRC     = tests/fuzz_wire.c gossip/wire.c gossip/crc32c.c
FUZZ_CFLAGS  = -std=c11 -D_GNU_SOURCE -I. -g -O1 -Wall -Wextra

.PHONY: fuzz fuzz-short fuzz-build
fuzz-build: $(FUZZ_DIR)/fuzz_wire $(FUZZ_DIR)/corpus/.seeded

$(FUZZ_DIR)/fuzz_wire: $(FUZZ_SRC) gossip/wire.h
	@$(call ensure_pkgs,clang libclang-rt-14-dev)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $(FUZZ_SRC) -lm

$(FUZZ_DIR)/corpus/.seeded: $(FUZZ_SRC) gossip/wire.h
	@mkdir -p $(FUZZ_DIR)/corpus
	$(CC) $(FUZZ_CFLAGS) -DFUZZ_SEEDGEN -o $(FUZZ_DIR)/seedgen $(FUZZ_SRC) -lm
	$(FUZZ_DIR)/seedgen $(FUZZ_DIR)/corpus && touch $@

fuzz: fuzz-build
	$(FUZZ_DIR)/fuzz_wire -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus

fuzz-short:
	$(MAKE) fuzz FUZZ_SECONDS=60
