# tests/tools/ptyrun: runs a command on a pseudo-terminal and presses ^C on
# it (the launchers' Ctrl-C test, tests/e2e/launch_ctrlc.sh). A test tool,
# not a unit test, so it is not named test_*. Built before `make test`.
PTYRUN = $(BUILD)/tests/tools/ptyrun

$(PTYRUN): $(BUILD)/tests/tools/ptyrun.o
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lutil

.PHONY: ptyrun
ptyrun: $(PTYRUN)
test: $(PTYRUN)
