# model/: per-file flags for the hot non-BLAS loops. -O3 turns on the loop
# vectoriser's full cost model (at -O2 GCC 12 only vectorises loops without
# remainders), fp-contract lets the AVX2+FMA clones fuse multiply-adds, and
# no-math-errno lets sqrtf vectorise. Nothing here is -march=native: the
# target_clones in the sources pick the instruction set at load time.
MODEL_HOT_FLAGS = -O3 -ffp-contract=fast -fno-math-errno
$(BUILD)/model/kernels.o $(BUILD)/model/adamw.o: CFLAGS += $(MODEL_HOT_FLAGS)
