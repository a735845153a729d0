# gossip/ codecs and CHOCO arithmetic: per-file flags. -O3 turns on GCC's
# full vectoriser (at -O2 GCC 12 only vectorises loops without remainders);
# -ffp-contract=off is not an optimisation but a contract: a copy update
# (copy + code * scale) must round the same way on the sender and on every
# receiver, whatever compiler built them and whichever clone of a kernel the
# CPU picked, so no multiply-add may be fused (docs/protocol.md, "Codec
# payloads"). no-trapping-math lets compares become selects; it changes no
# result.
CODEC_HOT_FLAGS = -O3 -ffp-contract=off -fno-trapping-math
$(BUILD)/gossip/codec_dense.o $(BUILD)/gossip/codec_sparse.o $(BUILD)/gossip/choco.o: CFLAGS += $(CODEC_HOT_FLAGS)
