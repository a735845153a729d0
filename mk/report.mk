# murmur report draws its plots with gnuplot (any build with the png or
# pngcairo terminal); the tests check the PNGs when gnuplot is there.
.PHONY: report-deps
report-deps:
	@command -v gnuplot >/dev/null 2>&1 || { $(call ensure_pkgs,gnuplot-nox); }

all: report-deps
test: report-deps
