# make bench-gossip: transport throughput (plaintext, TLS) against a raw TCP
# copy loop measured in the same run, for 1, 4 and 64 MB vectors; also
# OpenSSL's own blocking loop and the bound the cipher sets on this machine;
# then the codecs (1 M and 16 M floats): per-core encode/decode speed, bytes
# per float, and parameters per second over TLS against fp32 over TLS.
# Figures go to build/bench-gossip.csv and build/bench-gossip-codecs.csv and,
# with gnuplot, build/bench-gossip.png and build/bench-gossip-codecs.png.
#   BENCH_MB=256     megabytes moved per trial
#   BENCH_TRIALS=3   best of this many interleaved trials is printed
#   BENCH_CODECS=fp32,int8,...   the codec rows (none: skip them)
#   BENCH_STREAM_CODECS=int8     codecs whose exchange is also measured end to
#                                end, sequential and streamed (none: none)
#   BENCH_CHUNK=131072           floats per chunk of the streamed exchange
#   BENCH_CODEC_FLOATS=1048576,16777216   the codec rows' vector lengths
BENCH_MB ?= 256
BENCH_TRIALS ?= 3

.PHONY: bench-gossip
$(BUILD)/bench_gossip: $(BUILD)/tests/bench_gossip.o $(BUILD)/tests/bench_codec.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

bench-gossip: deps $(BUILD)/bench_gossip
	@sh scripts/make-certs.sh $(BUILD)/bench-certs 2 >/dev/null
	BENCH_TRIALS=$(BENCH_TRIALS) ./$(BUILD)/bench_gossip $(BUILD)/bench-certs $(BENCH_MB) \
	    $(BUILD)/bench-gossip.csv
	@sh scripts/plot-bench-gossip.sh $(BUILD)/bench-gossip.csv
	@sh scripts/plot-bench-gossip.sh $(BUILD)/bench-gossip-codecs.csv
