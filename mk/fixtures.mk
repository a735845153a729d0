# Reference fixtures written by independent scripts, committed, and read by
# the unit tests (never regenerated in the test path). `make fixtures`
# rewrites them; the outer optimizer's needs numpy (python3-numpy).
.PHONY: fixtures
fixtures:
	@$(call ensure_pkgs,python3-numpy)
	/usr/bin/python3 tests/fixtures/outer_ref.py tests/fixtures/outer_ref.txt
	/usr/bin/python3 tests/fixtures/noloco_ref.py tests/fixtures/noloco_ref.txt
