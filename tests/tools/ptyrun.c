/* ptyrun: run a command on a fresh pseudo-terminal, as a user's terminal
 * would, and press Ctrl-C on it when a condition holds. For the launcher
 * tests (tests/e2e/launch_ctrlc.sh): the interrupt must reach the command
 * the way a real terminal sends it, through the line discipline to the
 * whole foreground process group, not as a kill() to one pid.
 *
 *   ptyrun [-w CONDITION] [-t TIMEOUT] [-o OUTFILE] -- COMMAND [ARGS...]
 *
 * COMMAND runs as the leader of a new session whose controlling terminal is
 * the pty, so it and every child that does not leave its process group form
 * the foreground process group, as a job started from an interactive shell.
 * It starts with SIGINT, SIGQUIT, SIGTERM and SIGHUP at their defaults,
 * whatever ptyrun inherited (a background job of a script has SIGINT
 * ignored). Everything it writes to the terminal is copied to OUTFILE
 * (default: ptyrun's stdout).
 *   -w CONDITION  `sh -c CONDITION` every 100 ms; the first time it exits 0,
 *                 ptyrun writes the terminal's VINTR character (^C) to the
 *                 pty master, once. Without -w nothing is pressed.
 *   -t TIMEOUT    seconds (default 60): when COMMAND has not ended by then,
 *                 its process group gets SIGKILL and ptyrun exits 124.
 * Exit status: COMMAND's own, 128+N when signal N killed it (and the line
 * "ptyrun: COMMAND was killed by signal N" on stderr, to tell it from an
 * exit with that status), 124 on timeout, 125 when ptyrun itself failed
 * (no pty, no fork). A line "ptyrun: pressed ^C after S s" goes to stderr
 * when ^C was written. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr, "usage: ptyrun [-w CONDITION] [-t TIMEOUT] [-o OUTFILE] -- COMMAND [ARGS...]\n");
    exit(125);
}

/* 1 when `sh -c cond` exits 0, else 0. Its output goes to our stderr. */
static int condition_holds(const char *cond)
{
    pid_t p = fork();
    if (p < 0)
        return 0;
    if (p == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        execl("/bin/sh", "sh", "-c", cond, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Copy what the pty has to say to out: 1 when something was copied, 0 when
 * nothing came within timeout_ms, -1 at EOF or error (EIO once every slave
 * descriptor is closed). */
static int drain(int master, int out, int timeout_ms)
{
    struct pollfd pfd = {.fd = master, .events = POLLIN};
    int r = poll(&pfd, 1, timeout_ms);
    if (r == 0 || (r < 0 && errno == EINTR))
        return 0;
    if (r < 0)
        return -1;
    char buf[4096];
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0)
        return -1;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(out, buf + off, (size_t)(n - off));
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        off += w;
    }
    return 1;
}

int main(int argc, char **argv)
{
    const char *cond = NULL, *outfile = NULL;
    double timeout = 60;
    int opt;
    while ((opt = getopt(argc, argv, "+w:t:o:")) != -1) {
        switch (opt) {
        case 'w': cond = optarg; break;
        case 't': timeout = atof(optarg); break;
        case 'o': outfile = optarg; break;
        default: usage();
        }
    }
    if (optind >= argc || !(timeout > 0))
        usage();
    int out = 1;
    if (outfile && (out = open(outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        perror(outfile);
        return 125;
    }

    struct termios tio;
    memset(&tio, 0, sizeof tio);
    cfmakeraw(&tio);
    /* A cooked terminal, as a login shell leaves it: signals from ^C on. */
    tio.c_iflag = ICRNL | IXON;
    tio.c_oflag = OPOST | ONLCR;
    tio.c_cflag = CS8 | CREAD;
    tio.c_lflag = ISIG | ICANON | IEXTEN | ECHO | ECHOE | ECHOK;
    tio.c_cc[VINTR] = 3; /* ^C */
    tio.c_cc[VQUIT] = 28;
    tio.c_cc[VERASE] = 127;
    tio.c_cc[VKILL] = 21;
    tio.c_cc[VEOF] = 4;
    tio.c_cc[VMIN] = 1;
    cfsetispeed(&tio, B38400);
    cfsetospeed(&tio, B38400);
    struct winsize ws = {.ws_row = 40, .ws_col = 132};

    int master;
    pid_t child = forkpty(&master, NULL, &tio, &ws);
    if (child < 0) {
        perror("ptyrun: forkpty");
        return 125;
    }
    if (child == 0) {
        static const int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE};
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "ptyrun: %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    fcntl(master, F_SETFD, FD_CLOEXEC);

    double start = now(), next_check = start;
    int pressed = 0, status = 0, ended = 0, open_pty = 1;
    while (!ended) {
        if (now() - start > timeout) {
            fprintf(stderr, "ptyrun: %s still running after %g s: SIGKILL to its process group\n",
                    argv[optind], timeout);
            kill(-child, SIGKILL);
            waitpid(child, &status, 0);
            return 124;
        }
        if (open_pty)
            open_pty = drain(master, out, 50) >= 0;
        else
            usleep(50 * 1000);
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child)
            ended = 1;
        if (!ended && cond && !pressed && now() >= next_check) {
            next_check = now() + 0.1;
            if (condition_holds(cond)) {
                struct termios cur;
                char c = tcgetattr(master, &cur) == 0 ? (char)cur.c_cc[VINTR] : 3;
                if (write(master, &c, 1) == 1) {
                    pressed = 1;
                    fprintf(stderr, "ptyrun: pressed ^C after %.1f s\n", now() - start);
                }
            }
        }
    }
    /* What the command's children still had buffered on the terminal. */
    while (open_pty && drain(master, out, 100) > 0)
        ;
    close(master);
    if (WIFSIGNALED(status)) {
        /* Not an exit status: a launcher killed by the terminal's signal
         * leaves its children behind, and a test must be able to tell. */
        fprintf(stderr, "ptyrun: %s was killed by signal %d\n", argv[optind], WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
