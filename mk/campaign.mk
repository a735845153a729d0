# The fault campaign (tests/campaign/, scripts/campaign.sh): real peers, real
# faults (SIGKILL, partitions and throttled links in network namespaces, a
# full disk). Parts need root; they say "skipped" without it.
#   make campaign         full version (minutes): more faults, longer runs
#   make campaign-short   the quick version that `make test` also runs
.PHONY: campaign campaign-short
campaign: murmur
	@sh scripts/campaign.sh

campaign-short: murmur
	@sh scripts/campaign.sh --short
