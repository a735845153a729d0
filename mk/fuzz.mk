# make fuzz        libFuzzer on the frame decoder, on every codec decoder, on
#                  whole VECTOR frames of every codec (header fields and
#                  body together), FUZZ_SECONDS each (default 600), and on
#                  the MEMBERS payload's decoder and the merge,
#                  FUZZ_MEMBERS_SECONDS (default FUZZ_SECONDS)
# make fuzz-short  the same for 20 s each, the MEMBERS payload 5 s (what CI
#                  runs)
# Needs clang with compiler-rt (libFuzzer). The corpora live in build-fuzz/
# (corpus/ for the frame decoder, corpus-codec/ for the codecs,
# corpus-frame/ for whole frames, corpus-members/ for MEMBERS payloads).
FUZZ_DIR     = build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_SRC     = tests/fuzz_wire.c net/wire.c net/algo.c gossip/mix.c gossip/robust.c base/crc32c.c \
               base/finite.c
FUZZ_CODEC_SRC = tests/fuzz_codec.c gossip/codec.c gossip/codec_dense.c gossip/codec_sparse.c \
                 base/crc32c.c base/finite.c base/text.c
FUZZ_CODEC_HDR = gossip/codec.h gossip/codec_internal.h base/crc32c.h base/finite.h base/text.h
FUZZ_FRAME_SRC = tests/fuzz_frame.c $(filter-out tests/fuzz_codec.c,$(FUZZ_CODEC_SRC)) net/wire.c net/algo.c \
                 gossip/mix.c gossip/robust.c
FUZZ_MEMBERS_SRC = tests/fuzz_members.c $(wildcard member/*.c) base/sha256.c
FUZZ_MEMBERS_HDR = member/member.h member/member_int.h base/sha256.h
FUZZ_MEMBERS_SECONDS ?= $(FUZZ_SECONDS)
FUZZ_CFLAGS  = -std=c11 -D_GNU_SOURCE -I. -g -O1 -Wall -Wextra -ffp-contract=off

.PHONY: fuzz fuzz-short fuzz-build
fuzz-build: $(FUZZ_DIR)/fuzz_wire $(FUZZ_DIR)/corpus/.seeded \
            $(FUZZ_DIR)/fuzz_codec $(FUZZ_DIR)/corpus-codec/.seeded \
            $(FUZZ_DIR)/fuzz_frame $(FUZZ_DIR)/corpus-frame/.seeded \
            $(FUZZ_DIR)/fuzz_members $(FUZZ_DIR)/corpus-members/.seeded

$(FUZZ_DIR)/fuzz_wire: $(FUZZ_SRC) net/wire.h net/algo.h gossip/mix.h
	@$(call ensure_pkgs,clang libclang-rt-14-dev)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $(FUZZ_SRC) -lm

$(FUZZ_DIR)/corpus/.seeded: $(FUZZ_SRC) net/wire.h net/algo.h gossip/mix.h
	@mkdir -p $(FUZZ_DIR)/corpus
	$(CC) $(FUZZ_CFLAGS) -DFUZZ_SEEDGEN -o $(FUZZ_DIR)/seedgen $(FUZZ_SRC) -lm
	$(FUZZ_DIR)/seedgen $(FUZZ_DIR)/corpus && touch $@

$(FUZZ_DIR)/fuzz_codec: $(FUZZ_CODEC_SRC) $(FUZZ_CODEC_HDR)
	@$(call ensure_pkgs,clang libclang-rt-14-dev)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $(FUZZ_CODEC_SRC) -lm

$(FUZZ_DIR)/corpus-codec/.seeded: $(FUZZ_CODEC_SRC) $(FUZZ_CODEC_HDR)
	@mkdir -p $(FUZZ_DIR)/corpus-codec
	$(CC) $(FUZZ_CFLAGS) -DFUZZ_SEEDGEN -o $(FUZZ_DIR)/seedgen-codec $(FUZZ_CODEC_SRC) -lm
	$(FUZZ_DIR)/seedgen-codec $(FUZZ_DIR)/corpus-codec && touch $@

$(FUZZ_DIR)/fuzz_frame: $(FUZZ_FRAME_SRC) $(FUZZ_CODEC_HDR) net/wire.h
	@$(call ensure_pkgs,clang libclang-rt-14-dev)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $(FUZZ_FRAME_SRC) -lm

$(FUZZ_DIR)/corpus-frame/.seeded: $(FUZZ_FRAME_SRC) $(FUZZ_CODEC_HDR) net/wire.h
	@mkdir -p $(FUZZ_DIR)/corpus-frame
	$(CC) $(FUZZ_CFLAGS) -DFUZZ_SEEDGEN -o $(FUZZ_DIR)/seedgen-frame $(FUZZ_FRAME_SRC) -lm
	$(FUZZ_DIR)/seedgen-frame $(FUZZ_DIR)/corpus-frame && touch $@

# The tag's SHA-256 is libcrypto's (base/sha256.c).
$(FUZZ_DIR)/fuzz_members: $(FUZZ_MEMBERS_SRC) $(FUZZ_MEMBERS_HDR)
	@$(call ensure_pkgs,clang libclang-rt-14-dev)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $(FUZZ_MEMBERS_SRC) -lcrypto

$(FUZZ_DIR)/corpus-members/.seeded: $(FUZZ_MEMBERS_SRC) $(FUZZ_MEMBERS_HDR)
	@mkdir -p $(FUZZ_DIR)/corpus-members
	$(CC) $(FUZZ_CFLAGS) -DFUZZ_SEEDGEN -o $(FUZZ_DIR)/seedgen-members $(FUZZ_MEMBERS_SRC) -lcrypto
	$(FUZZ_DIR)/seedgen-members $(FUZZ_DIR)/corpus-members && touch $@

fuzz: fuzz-build
	$(FUZZ_DIR)/fuzz_wire -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus
	$(FUZZ_DIR)/fuzz_codec -max_total_time=$(FUZZ_SECONDS) -max_len=12000 \
	    -artifact_prefix=$(FUZZ_DIR)/codec- $(FUZZ_DIR)/corpus-codec
	$(FUZZ_DIR)/fuzz_frame -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    -artifact_prefix=$(FUZZ_DIR)/frame- $(FUZZ_DIR)/corpus-frame
	$(FUZZ_DIR)/fuzz_members -max_total_time=$(FUZZ_MEMBERS_SECONDS) -max_len=8192 \
	    -artifact_prefix=$(FUZZ_DIR)/members- $(FUZZ_DIR)/corpus-members

fuzz-short:
	$(MAKE) fuzz FUZZ_SECONDS=20 FUZZ_MEMBERS_SECONDS=5
