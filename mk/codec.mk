# gossip/ codecs and CHOCO arithmetic: per-file flags. -O3 turns on GCC's
# full vectoriser (at -O2 GCC 12 only vectorises loops without remainders);
# -ffp-contract=off is not an optimisation but a contract: a copy update
# (copy + code * scale) must round the same way on the sender and on every
# receiver, whatever compiler built them and whichever clone of a kernel the
# CPU picked, so no multiply-add may be fused (docs/protocol.md, "Codec
# payloads"). no-trapping-math lets compares become selects; it changes no
# result.
CODEC_HOT_FLAGS = -O3 -ffp-contract=off -fno-trapping-math
$(BUILD)/gossip/codec_dense.o $(BUILD)/gossip/codec_sparse.o $(BUILD)/gossip/choco.o $(BUILD)/gossip/ef.o: CFLAGS += $(CODEC_HOT_FLAGS)

# make choco-sweep: the ring simulation behind the gamma table of
# docs/compression.md (tests/tools/choco_sweep.c), its CSV and plot in
# build/. Minutes of CPU: run it under the heavy lock.
#   SWEEP_ARGS="-n 16 -d 2048 -r 6000 -s 3"
SWEEP_ARGS ?= -n 16 -d 2048 -r 6000 -s 3
.PHONY: choco-sweep
$(BUILD)/tests/tools/choco_sweep: $(BUILD)/tests/tools/choco_sweep.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

choco-sweep: deps $(BUILD)/tests/tools/choco_sweep
	./$(BUILD)/tests/tools/choco_sweep $(SWEEP_ARGS) > $(BUILD)/choco-sweep.csv
	@sh scripts/plot-choco-sweep.sh $(BUILD)/choco-sweep.csv

# make codec-design: the block-size, index-stream and selection
# measurements of docs/compression.md (tests/tools/codec_design.c), CSV in
# build/codec-design*.csv, on 1 M and 16 M model-like floats.
#   DESIGN_VECTOR=checkpoint.bin [DESIGN_VECTOR2=other.bin]: a real vector
#   (and, with a second file, the difference of the two) instead
.PHONY: codec-design
$(BUILD)/tests/tools/codec_design: $(BUILD)/tests/tools/codec_design.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

codec-design: deps $(BUILD)/tests/tools/codec_design
ifdef DESIGN_VECTOR
	./$(BUILD)/tests/tools/codec_design -v $(DESIGN_VECTOR) $(if $(DESIGN_VECTOR2),-w $(DESIGN_VECTOR2)) \
	    > $(BUILD)/codec-design-real.csv
else
	./$(BUILD)/tests/tools/codec_design -n 1048576 > $(BUILD)/codec-design-1m.csv
	./$(BUILD)/tests/tools/codec_design -n 16777216 -r 3 > $(BUILD)/codec-design-16m.csv
endif
