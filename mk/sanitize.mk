# make test-sanitize: the wire, transport, all-reduce, codec, CHOCO, error-feedback, robust-mixing, membership,
# deadline and work tests, and the topology parser's refusals and mangled files and the families, built with ASan+UBSan in
# their own build directory (build-san), with assert() on (the release build
# defines NDEBUG), then run. Any sanitizer report or failed assertion fails.
SAN_BUILD = build-san
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_TESTS = $(patsubst tests/%.c,%,$(wildcard tests/test_wire*.c tests/test_transport*.c tests/test_allreduce.c \
                                             tests/test_codec*.c tests/test_choco*.c tests/test_outer.c \
                                             tests/test_robust.c tests/test_members*.c \
                                             tests/test_topology_errors.c tests/test_topo_family.c \
                                             tests/test_deadline.c tests/test_work.c tests/test_ef.c))

.PHONY: test-sanitize
test-sanitize: deps
	$(MAKE) BUILD=$(SAN_BUILD) SANITIZE="$(SAN_FLAGS)" ASSERTS= OPT=-O1 $(SAN_TESTS:%=$(SAN_BUILD)/tests/%)
	@fail=0; for t in $(SAN_TESTS); do \
	  echo "=== $$t (ASan+UBSan)"; \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    timeout -k 10 600 ./$(SAN_BUILD)/tests/$$t >$(SAN_BUILD)/$$t.log 2>&1 \
	    && echo "--- ok   $$t" || { echo "--- FAIL $$t (log: $(SAN_BUILD)/$$t.log)"; tail -30 $(SAN_BUILD)/$$t.log; fail=1; }; \
	done; exit $$fail

# The peer itself under the sanitizers: the node's end-to-end tests run
# against build-san/murmur (a sanitizer report makes a peer exit non-zero,
# which fails the test).
SAN_E2E = node_gossip_rate node_ring_train node_kill_resume node_async_straggler node_wrong_model \
          node_allreduce node_allreduce_kill node_choco node_uneven node_outer_compress
.PHONY: test-sanitize-node
test-sanitize: test-sanitize-node
test-sanitize-node: deps
	$(MAKE) BUILD=$(SAN_BUILD) SANITIZE="$(SAN_FLAGS)" ASSERTS= OPT=-O1 $(SAN_BUILD)/murmur
	@fail=0; for t in $(SAN_E2E); do \
	  echo "=== e2e/$$t (ASan+UBSan)"; \
	  MURMUR=$(CURDIR)/$(SAN_BUILD)/murmur ASAN_OPTIONS=detect_leaks=1 \
	    timeout -k 10 600 sh tests/e2e/$$t.sh >$(SAN_BUILD)/$$t.log 2>&1 \
	    && echo "--- ok   e2e/$$t" || { echo "--- FAIL e2e/$$t (log: $(SAN_BUILD)/$$t.log)"; tail -20 $(SAN_BUILD)/$$t.log; fail=1; }; \
	done; exit $$fail

$(SAN_BUILD)/murmur: $(PROG_SRC:%.c=$(SAN_BUILD)/%.o) $(SAN_BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)
