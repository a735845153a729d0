# make bench-model: training tokens/s of the C model against PyTorch, see
# scripts/bench_model.sh. The bench program is not a test (no test_ prefix).
$(BUILD)/tests/bench_model: $(BUILD)/tests/bench_model.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

# PyTorch (Debian's python3-torch) is the baseline it measures against.
bench-model: deps $(BUILD)/tests/bench_model
	@$(call ensure_pkgs,python3-torch)
	@BUILD=$(BUILD) sh scripts/bench_model.sh
