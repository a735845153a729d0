# make check-layers: every #include of every room against what the room's
# README.md allows (scripts/check-layers.sh); make test runs it first.
.PHONY: check-layers
check-layers:
	@sh scripts/check-layers.sh
