# model/: per-file flags for the hot non-BLAS loops. -O3 turns on the loop
# vectoriser's full cost model (at -O2 GCC 12 only vectorises loops without
# remainders), fp-contract lets the AVX2+FMA clones fuse multiply-adds, and
# no-math-errno lets sqrtf vectorise, no-trapping-math lets the clamps in
# mm_expf become selects (GCC will not if-convert a compare that may trap).
# Nothing here is -march=native: the target_clones in the sources pick the
# instruction set at load time.
MODEL_HOT_FLAGS = -O3 -ffp-contract=fast -fno-math-errno -fno-trapping-math
$(BUILD)/model/kernels.o $(BUILD)/model/adamw.o: CFLAGS += $(MODEL_HOT_FLAGS)
