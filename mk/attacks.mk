# The fault campaign's hostile client (tests/campaign/05_hostile_input.sh): not
# a peer and not a unit test, so it is not named test_*. Built before `make test`.
HOSTILE_CLIENT = $(BUILD)/tests/tools/hostile_client

$(HOSTILE_CLIENT): $(BUILD)/tests/tools/hostile_client.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

.PHONY: hostile-client
hostile-client: $(HOSTILE_CLIENT)
test: $(HOSTILE_CLIENT)

# The browser tests' DevTools client (tests/e2e/watch_browser.sh) and the
# hostile HTTP client (tests/e2e/http_hostile.sh).
CDP = $(BUILD)/tests/tools/cdp
$(CDP): $(BUILD)/tests/tools/cdp.o
	$(CC) $(ALL_CFLAGS) -o $@ $^
test: $(CDP)

# A peer written from docs/protocol.md alone, sending what murmur's own
# sender never does (tests/e2e/node_wire_peer.sh).
WIRE_PEER = $(BUILD)/tests/tools/wire_peer
$(WIRE_PEER): $(BUILD)/tests/tools/wire_peer.o $(BUILD)/libmurmur.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)
test: $(WIRE_PEER)
build-tests: $(CDP) $(HOSTILE_CLIENT) $(WIRE_PEER)
