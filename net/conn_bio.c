/* A BIO that connects OpenSSL to libuv without memory-BIO copies: reads
 * come from the connection's socket read buffer, and records are written
 * straight into pooled chunks that libuv then writes out. Compared with a
 * pair of BIO_s_mem this saves one memcpy per direction and the growing and
 * zeroing of the memory BIO's buffer. */
#include "net/transport_int.h"

#include <stdlib.h>
#include <string.h>

static BIO_METHOD *method;

tls_chunk *mm__conn_chunk_get(conn *c)
{
    tls_chunk *ch = c->pool;
    if (ch) {
        c->pool = ch->next;
        c->pool_n--;
    } else if (!(ch = malloc(sizeof *ch))) {
        return NULL;
    }
    ch->c = c;
    ch->next = NULL;
    ch->len = 0;
    return ch;
}

void mm__conn_chunk_put(conn *c, tls_chunk *ch)
{
    if (c->pool_n < MM_CHUNK_POOL && c->st != C_CLOSING) {
        ch->next = c->pool;
        c->pool = ch;
        c->pool_n++;
    } else {
        free(ch);
    }
}

void mm__conn_chunks_free(conn *c)
{
    tls_chunk *lists[3] = {c->pool, c->w_ready, c->w_cur};
    for (int i = 0; i < 3; i++)
        while (lists[i]) {
            tls_chunk *n = i == 2 ? NULL : lists[i]->next;
            free(lists[i]);
            lists[i] = n;
        }
    c->pool = c->w_ready = c->w_ready_tail = c->w_cur = NULL;
    c->pool_n = 0;
}

static int bio_write(BIO *b, const char *data, int len)
{
    conn *c = BIO_get_data(b);
    size_t left = (size_t)len;
    while (left) {
        if (!c->w_cur || c->w_cur->len == MM_CHUNK_CAP) {
            if (c->w_cur) {
                if (c->w_ready_tail)
                    c->w_ready_tail->next = c->w_cur;
                else
                    c->w_ready = c->w_cur;
                c->w_ready_tail = c->w_cur;
            }
            if (!(c->w_cur = mm__conn_chunk_get(c)))
                return -1;
        }
        size_t n = MM_CHUNK_CAP - c->w_cur->len;
        if (n > left)
            n = left;
        memcpy(c->w_cur->data + c->w_cur->len, data, n);
        c->w_cur->len += n;
        data += n;
        left -= n;
    }
    return len;
}

static int bio_read(BIO *b, char *out, int len)
{
    conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (c->in_len == 0) {
        BIO_set_retry_read(b);
        return -1;
    }
    size_t n = (size_t)len < c->in_len ? (size_t)len : c->in_len;
    memcpy(out, c->netbuf + c->in_off, n);
    c->in_off += n;
    c->in_len -= n;
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    conn *c = BIO_get_data(b);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_PENDING:
        return (long)c->in_len;
    case BIO_CTRL_WPENDING:
        return 0;
    default:
        return 0;
    }
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

BIO *mm__conn_bio_new(conn *c)
{
    /* Made once; a race here would only leak one method table. */
    if (!method) {
        BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "murmur-uv");
        if (!m)
            return NULL;
        BIO_meth_set_write(m, bio_write);
        BIO_meth_set_read(m, bio_read);
        BIO_meth_set_ctrl(m, bio_ctrl);
        BIO_meth_set_create(m, bio_create);
        method = m;
    }
    BIO *b = BIO_new(method);
    if (b)
        BIO_set_data(b, c);
    return b;
}
