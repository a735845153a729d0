# make bench-report: `murmur report --no-plots` on large generated runs
# (tests/tools/gen_run.c: every peer's metrics.jsonl written by the peers'
# own writer, a 1024-float sketch every 20 rounds, seven kinds of damaged
# line), against reading the same files (cat) in the same run. Figures go to
# build/bench-report.csv and, with gnuplot, build/bench-report.png.
#   BENCH_RUNS="32x5000 32x20000 256x2000x8"  PEERSxROUNDS[xDEGREE]: about
#                    150, 600 and 550 MB, kept in build/bench-report/
#   BENCH_TRIALS=3   interleaved trials; best wall and median CPU printed
BENCH_RUNS ?= 32x5000 32x20000 256x2000x8
BENCH_TRIALS ?= 3
GEN_RUN = $(BUILD)/tests/tools/gen_run

.PHONY: bench-report
$(GEN_RUN): $(BUILD)/tests/tools/gen_run.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

bench-report: deps murmur $(GEN_RUN)
	@$(call ensure_pkgs,time)
	@BUILD=$(BUILD) BENCH_RUNS="$(BENCH_RUNS)" BENCH_TRIALS=$(BENCH_TRIALS) sh scripts/bench-report.sh
