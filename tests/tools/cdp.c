/* cdp: drives a headless Chromium through the DevTools protocol on a pipe
 * (--remote-debugging-pipe: NUL-terminated JSON messages, the browser reads
 * fd 3 and writes fd 4), for the browser tests of murmur watch
 * (tests/e2e/watch_browser.sh). One page, one session, then steps in order:
 *
 *   cdp CHROMIUM USER_DATA_DIR WIDTHxHEIGHT URL STEP...
 *     wait:SEC:EXPR   evaluate EXPR every 200 ms until it is true (fail after SEC)
 *     print:EXPR      print String(EXPR) on a line of its own
 *     shot:FILE       a PNG screenshot of the page
 *     sleep:SEC
 *     run:COMMAND     sh -c COMMAND (kill a peer in the middle of the session)
 *
 * Exit 0 when every step passed, 1 when one failed (said on stderr), 2 usage.
 * A test tool: it reads only what the browser it started writes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int to_chrome = -1, from_chrome = -1;
static pid_t chrome = -1;
static char session[128];
static int next_id = 1;
static char *inbuf;
static size_t in_len, in_cap;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cdp: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (chrome > 0) {
        kill(chrome, SIGKILL);
        waitpid(chrome, NULL, 0);
    }
    exit(1);
}

/* JSON string body of s (quotes not included) into out. */
static void json_escape(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s && k + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[k++] = '\\';
            out[k++] = (char)c;
        } else if (c < 0x20) {
            k += (size_t)snprintf(out + k, cap - k, "\\u%04x", c);
        } else {
            out[k++] = (char)c;
        }
    }
    out[k] = '\0';
}

/* Sends method(params) (params: a JSON object's text) and returns the
 * response message with its id (malloc'd), skipping events. */
static char *call(const char *method, const char *params, bool in_session, double timeout)
{
    int id = next_id++;
    size_t cap = strlen(params) + 512;
    char *msg = malloc(cap);
    int n = snprintf(msg, cap, "{\"id\":%d,%s%s%s\"method\":\"%s\",\"params\":%s}", id,
                     in_session ? "\"sessionId\":\"" : "", in_session ? session : "",
                     in_session ? "\"," : "", method, params);
    if (write(to_chrome, msg, (size_t)n + 1) != n + 1) /* the NUL too */
        die("writing to the browser: %s", strerror(errno));
    free(msg);
    char want[32];
    int wl = snprintf(want, sizeof want, "{\"id\":%d,", id);
    double end = now_s() + timeout;
    for (;;) {
        /* a whole message in the buffer? */
        char *z = memchr(inbuf, '\0', in_len);
        if (z) {
            size_t len = (size_t)(z - inbuf);
            char *m = NULL;
            if (len >= (size_t)wl && !memcmp(inbuf, want, (size_t)wl)) {
                m = malloc(len + 1);
                memcpy(m, inbuf, len + 1);
            }
            memmove(inbuf, z + 1, in_len - len - 1);
            in_len -= len + 1;
            if (m) {
                if (strstr(m, "\"error\":{") && !strstr(m, "\"result\":"))
                    die("%s failed: %.300s", method, m);
                return m;
            }
            continue;
        }
        double left = end - now_s();
        if (left <= 0)
            die("no answer to %s within %.0f s", method, timeout);
        struct pollfd p = {.fd = from_chrome, .events = POLLIN};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        if (in_cap - in_len < 65536) {
            in_cap = in_cap ? 2 * in_cap : 1 << 20;
            inbuf = realloc(inbuf, in_cap);
            if (!inbuf)
                die("out of memory");
        }
        ssize_t r = read(from_chrome, inbuf + in_len, in_cap - in_len);
        if (r <= 0)
            die("the browser closed its pipe (%s)", r < 0 ? strerror(errno) : "EOF");
        in_len += (size_t)r;
    }
}

/* The string value after "key":" in m, unescaped (\" \\ \/ \n \uXXXX as '?'). */
static char *string_field(const char *m, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(m, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    char *out = malloc(strlen(p) + 1);
    size_t k = 0;
    for (; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            if (*p == 'n')
                out[k++] = '\n';
            else if (*p == 'u') {
                out[k++] = '?';
                p += 4;
            } else
                out[k++] = *p;
        } else {
            out[k++] = *p;
        }
    }
    out[k] = '\0';
    return out;
}

/* String(EXPR) in the page. */
static char *eval(const char *expr)
{
    char esc[8192], params[8400];
    char wrapped[4200];
    snprintf(wrapped, sizeof wrapped, "(() => { try { return String(%s); } catch (e) { return 'error: ' + e; } })()", expr);
    json_escape(wrapped, esc, sizeof esc);
    snprintf(params, sizeof params, "{\"expression\":\"%s\",\"returnByValue\":true}", esc);
    char *m = call("Runtime.evaluate", params, true, 60);
    char *v = string_field(m, "value");
    free(m);
    return v ? v : strdup("");
}

static int b64(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static void screenshot(const char *file)
{
    char *m = call("Page.captureScreenshot", "{\"format\":\"png\"}", true, 60);
    char *d = string_field(m, "data");
    free(m);
    if (!d)
        die("no screenshot data");
    FILE *f = fopen(file, "wb");
    if (!f)
        die("%s: %s", file, strerror(errno));
    unsigned acc = 0;
    int bits = 0;
    for (const char *p = d; *p; p++) {
        int v = b64(*p);
        if (v < 0)
            continue;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            fputc((int)((acc >> bits) & 0xff), f);
        }
    }
    fclose(f);
    free(d);
}

static void start_browser(const char *bin, const char *profile, const char *size)
{
    int a[2], b[2]; /* a: we write, chrome reads fd 3; b: chrome writes fd 4 */
    if (pipe(a) != 0 || pipe(b) != 0)
        die("pipe: %s", strerror(errno));
    chrome = fork();
    if (chrome < 0)
        die("fork: %s", strerror(errno));
    if (chrome == 0) {
        /* out of the way of 3 and 4 first: the pipes may be using them */
        int rd = fcntl(a[0], F_DUPFD, 100), wr = fcntl(b[1], F_DUPFD, 100);
        dup2(rd, 3);
        dup2(wr, 4);
        for (int fd = 5; fd < 1024; fd++)
            close(fd);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        char udd[4200], win[64];
        snprintf(udd, sizeof udd, "--user-data-dir=%s", profile);
        snprintf(win, sizeof win, "--window-size=%s", size);
        for (char *x = strchr(win, 'x'); x; x = NULL)
            *x = ',';
        execlp(bin, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
              "--no-first-run", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--hide-scrollbars", "--remote-debugging-pipe", udd, win,
              "about:blank", (char *)NULL);
        _exit(127);
    }
    close(a[0]);
    close(b[1]);
    to_chrome = a[1];
    from_chrome = b[0];
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: cdp CHROMIUM USER_DATA_DIR WIDTHxHEIGHT URL STEP...\n");
        return 2;
    }
    start_browser(argv[1], argv[2], argv[3]);
    char *m = call("Target.createTarget", "{\"url\":\"about:blank\"}", false, 60);
    char *target = string_field(m, "targetId");
    free(m);
    if (!target)
        die("no target");
    char params[512];
    snprintf(params, sizeof params, "{\"targetId\":\"%s\",\"flatten\":true}", target);
    free(target);
    m = call("Target.attachToTarget", params, false, 30);
    char *sid = string_field(m, "sessionId");
    free(m);
    if (!sid)
        die("no session");
    snprintf(session, sizeof session, "%s", sid);
    free(sid);
    char url[4300], esc[4200];
    json_escape(argv[4], esc, sizeof esc);
    snprintf(url, sizeof url, "{\"url\":\"%s\"}", esc);
    free(call("Page.navigate", url, true, 30));
    for (int i = 5; i < argc; i++) {
        const char *s = argv[i];
        if (!strncmp(s, "wait:", 5)) {
            char *colon = strchr(s + 5, ':');
            if (!colon)
                die("wait:SEC:EXPR, not %s", s);
            double end = now_s() + atof(s + 5);
            char *v = NULL;
            for (;;) {
                free(v);
                v = eval(colon + 1);
                if (!strcmp(v, "true"))
                    break;
                if (now_s() > end)
                    die("still not true after %.0f s: %s (last value: %s)", atof(s + 5),
                        colon + 1, v);
                usleep(200000);
            }
            free(v);
        } else if (!strncmp(s, "print:", 6)) {
            char *v = eval(s + 6);
            printf("%s\n", v);
            fflush(stdout);
            free(v);
        } else if (!strncmp(s, "shot:", 5)) {
            screenshot(s + 5);
        } else if (!strncmp(s, "sleep:", 6)) {
            usleep((useconds_t)(atof(s + 6) * 1e6));
        } else if (!strncmp(s, "run:", 4)) {
            if (system(s + 4) != 0)
                die("%s failed", s + 4);
        } else {
            die("unknown step %s", s);
        }
    }
    free(call("Browser.close", "{}", false, 10));
    waitpid(chrome, NULL, 0);
    return 0;
}
