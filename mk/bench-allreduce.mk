# make bench-allreduce: Open MPI's MPI_Allreduce over TCP, the centralized
# baseline (tests/bench_allreduce.c, scripts/bench-allreduce.sh), next to
# murmur node --algo allreduce on the same vectors and peer counts. Built with
# mpicc only here: nothing else links MPI. Installs libopenmpi-dev and
# openmpi-bin when missing (as root).
#   BENCH_RANKS="4 8"  BENCH_SIZES=1,4,16,64  BENCH_PASSES=6  BENCH_SECONDS=0.75
#   BENCH_IMPLS="mpi murmur" (or "mpi murmur base" BENCH_BASE=binary)
#   (scripts/bench-allreduce.sh --help for the rest)
#   BENCH_CHUNK=65536 (floats per murmur chunk)
.PHONY: bench-allreduce allreduce-deps
allreduce-deps:
	@$(call ensure_pkgs,libopenmpi-dev openmpi-bin)

$(BUILD)/bench_allreduce: tests/bench_allreduce.c | allreduce-deps
	@mkdir -p $(BUILD)
	mpicc -std=c11 -O2 -g -Wall -Wextra -o $@ $<

bench-allreduce: $(BUILD)/bench_allreduce murmur
	@BUILD=$(BUILD) sh scripts/bench-allreduce.sh
