# make check-layers: every #include of every room against what the room's
# README.md allows (scripts/check-layers.sh); make test runs it first.
.PHONY: check-layers
check-layers:
	@sh scripts/check-layers.sh

# make check-symbols: libmurmur.a exports mm_ names only (docs/architecture.md,
# "Names"): every other global is a room's internal that leaked, and an mm__
# name should have been made local by the room's link.
.PHONY: check-symbols
check-symbols: $(BUILD)/libmurmur.a
	@bad=$$(nm -g --defined-only $(BUILD)/libmurmur.a | awk 'NF == 3 && $$2 ~ /[TDBRC]/ { print $$3 }' | \
	        grep -v '^mm_' ; nm -g --defined-only $(BUILD)/libmurmur.a | awk 'NF == 3 { print $$3 }' | grep '^mm__'); \
	if [ -n "$$bad" ]; then echo "check-symbols: libmurmur.a exports names that are not public API:"; \
	  echo "$$bad" | sed 's/^/  /'; exit 1; fi; \
	echo "check-symbols: $$(nm -g --defined-only $(BUILD)/libmurmur.a | awk 'NF == 3 && $$2 ~ /[TDBRC]/' | wc -l) public mm_ names, nothing else exported"
test: check-symbols
