# Topology files shipped in topologies/: `make topologies` regenerates them
# (and the family files of 8 starting members, family-*-8.topo)
# with the murmur binary (tests/e2e/topo_shipped.sh checks they still match).
TOPO_SIZES = 4 8 16 32

.PHONY: topologies
topologies: murmur
	@for n in $(TOPO_SIZES); do \
	  ./murmur topo gen ring -n $$n > topologies/ring-$$n.topo && \
	  ./murmur topo gen chain -n $$n > topologies/chain-$$n.topo && \
	  ./murmur topo gen star -n $$n > topologies/star-$$n.topo && \
	  ./murmur topo gen complete -n $$n > topologies/complete-$$n.topo && \
	  ./murmur topo gen torus -n $$n > topologies/torus-$$n.topo && \
	  ./murmur topo gen exp -n $$n > topologies/exp-$$n.topo && \
	  ./murmur topo gen exp -n $$n --directed > topologies/exp-directed-$$n.topo && \
	  ./murmur topo gen one-peer-exp -n $$n > topologies/onepeer-exp-$$n.topo && \
	  ./murmur topo gen regular -n $$n -d 3 --seed 1 > topologies/regular-d3-$$n.topo && \
	  ./murmur topo gen er -n $$n --seed 1 > topologies/er-$$n.topo && \
	  ./murmur topo gen random-matching -n $$n --seed 1 > topologies/random-matching-$$n.topo && \
	  ./murmur topo gen local -n $$n > topologies/local-$$n.topo && \
	  ./murmur topo gen alt-exp-ring -n $$n > topologies/alt-exp-ring-$$n.topo && \
	  ./murmur topo gen base -n $$n -k 1 > topologies/base-k1-$$n.topo && \
	  ./murmur topo gen base -n $$n -k 3 > topologies/base-k3-$$n.topo && \
	  ./murmur topo gen epidemic -n $$n --seed 1 > topologies/epidemic-$$n.topo \
	  || exit 1; \
	done; \
	for k in ring exp one-peer-exp complete torus; do \
	  ./murmur topo gen $$k -n 8 --family > topologies/family-$$(echo $$k | sed 's/one-peer/onepeer/')-8.topo || exit 1; \
	done; \
	./murmur topo gen base -n 8 -k 1 --family > topologies/family-base-k1-8.topo && \
	./murmur topo gen regular -n 8 -d 3 --seed 1 --family > topologies/family-regular-d3-8.topo || exit 1; \
	echo "topologies/: $$(ls topologies/*.topo | wc -l) files"

# make bench-topo-family: what instantiating a topology family costs at
# 8 .. 1024 members, against `topo gen` + load of the same graph measured in
# the same run (BENCH_LARGE=1: the sparse families up to 2^20 members).
$(BUILD)/tests/bench_topo_family: $(BUILD)/tests/bench_topo_family.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

.PHONY: bench-topo-family
bench-topo-family: deps $(BUILD)/tests/bench_topo_family
	@./$(BUILD)/tests/bench_topo_family
