/*
 * natscodec.c: the NATS wire protocol's frames in C (see natscodec.h), the
 * one place where C parses MSG/HMSG/PING/PONG/+OK and frames PUB/HPUB, and
 * where it unframes and frames WebSocket data frames.
 * Compiled into natsproto.c, tclfast.c and tclcross_wait.c (each includes this
 * file with NATSCODEC_API static), not a unit of its own.
 */
#include <string.h>
#include <stdint.h>
#include "natscodec.h"

/* a field of a control line: [s, e) */
typedef struct {
    size_t s, e;
} field_t;

static int
is_sep(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* The fields of line[0:len), at most max; -1 when the line has a byte the
 * reference's bytes.split() would treat otherwise (other whitespace), a
 * control character, a non-ASCII byte, or more fields. */
static int
split_fields(const unsigned char *line, size_t len, field_t *f, int max)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        unsigned char c = line[i];
        if (is_sep(c)) {
            i++;
            continue;
        }
        if (n == max)
            return -1;
        f[n].s = i;
        while (i < len) {
            c = line[i];
            if (is_sep(c))
                break;
            if (c < 0x21 || c >= 0x7f)
                return -1;   /* \r \n \v \f, controls, non-ASCII */
            i++;
        }
        f[n].e = i;
        n++;
    }
    return n;
}

/* a decimal of at most 18 digits; -1 if not all digits or too long */
static long long
parse_dec(const unsigned char *p, size_t len)
{
    long long v = 0;
    size_t i;
    if (len == 0 || len > 18)
        return -1;
    for (i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

/* the MSG/HMSG frame whose control line is buf[pos:pos+len) */
static NATSCODEC_HOT int
scan_msg(const unsigned char *buf, size_t pos, size_t len, size_t n, long long max_size,
         natscodec_frame *fr)
{
    const unsigned char *line = buf + pos;
    field_t f[7], *reply = NULL, *hsf = NULL, *szf;
    int nf = split_fields(line, len, f, 7), hmsg;
    size_t l0, stop;
    long long sid, size, hsize = 0;

    if (nf < 4)
        return NATSCODEC_UNSURE;
    l0 = f[0].e - f[0].s;
    if (l0 == 3 && memcmp(line + f[0].s, "MSG", 3) == 0)
        hmsg = 0;
    else if (l0 == 4 && memcmp(line + f[0].s, "HMSG", 4) == 0)
        hmsg = 1;
    else
        return NATSCODEC_UNSURE;
    if (!hmsg && nf == 5) {
        reply = &f[3];
        szf = &f[4];
    } else if (!hmsg && nf == 4) {
        szf = &f[3];
    } else if (hmsg && nf == 5) {
        hsf = &f[3];
        szf = &f[4];
    } else if (hmsg && nf == 6) {
        reply = &f[3];
        hsf = &f[4];
        szf = &f[5];
    } else {
        return NATSCODEC_UNSURE;
    }
    sid = parse_dec(line + f[2].s, f[2].e - f[2].s);
    size = parse_dec(line + szf->s, szf->e - szf->s);
    if (hsf != NULL)
        hsize = parse_dec(line + hsf->s, hsf->e - hsf->s);
    if (sid < 0 || size < 0 || hsize < 0 || hsize > size || size > max_size)
        return NATSCODEC_UNSURE;
    fr->payload = pos + len + 2;
    fr->size = size;
    if (fr->payload + (size_t)size + 2 > n)
        return NATSCODEC_NEED_PAYLOAD;
    stop = fr->payload + (size_t)size;
    if (buf[stop] != '\r' || buf[stop + 1] != '\n')
        return NATSCODEC_UNSURE;
    fr->subject = pos + f[1].s;
    fr->subject_len = f[1].e - f[1].s;
    fr->reply = reply != NULL ? pos + reply->s : 0;
    fr->reply_len = reply != NULL ? reply->e - reply->s : 0;
    fr->sid_at = pos + f[2].s;
    fr->sid_len = f[2].e - f[2].s;
    fr->sid = sid;
    fr->hsize = hsf != NULL ? hsize : -1;
    fr->next = stop + 2;
    return NATSCODEC_MSG;
}

NATSCODEC_API NATSCODEC_HOT int
natscodec_scan(const unsigned char *buf, size_t pos, size_t n, long long max_size,
               natscodec_frame *fr)
{
    const unsigned char *start = buf + pos, *cr;
    size_t len;

    if (pos >= n)
        return NATSCODEC_NEED_LINE;
    cr = memchr(start, '\r', n - pos);
    if (cr == NULL || cr + 1 >= buf + n)
        return NATSCODEC_NEED_LINE;
    if (cr[1] != '\n')
        return NATSCODEC_UNSURE;     /* a lone CR: the reference decides */
    len = (size_t)(cr - start);
    fr->line_end = pos + len;
    fr->next = pos + len + 2;
    switch (start[0]) {
    case 'M':
    case 'H':
        return scan_msg(buf, pos, len, n, max_size, fr);
    case 'm':
    case 'h':
        return NATSCODEC_UNSURE;     /* msg, hmsg ...: the reference's case rules */
    }
    if (len == 4 && memcmp(start, "PING", 4) == 0)
        return NATSCODEC_PING;
    if (len == 4 && memcmp(start, "PONG", 4) == 0)
        return NATSCODEC_PONG;
    if (len == 3 && memcmp(start, "+OK", 3) == 0)
        return NATSCODEC_OK;
    return NATSCODEC_OTHER;
}

/* 10, 100 ... 10^18 */
static const long long pow10_above[18] = {
    10LL, 100LL, 1000LL, 10000LL, 100000LL, 1000000LL, 10000000LL, 100000000LL, 1000000000LL,
    10000000000LL, 100000000000LL, 1000000000000LL, 10000000000000LL, 100000000000000LL,
    1000000000000000LL, 10000000000000000LL, 100000000000000000LL, 1000000000000000000LL
};

/* how many decimal digits v (>= 0) has */
static size_t
dec_len(long long v)
{
    size_t n = 1;
    while (n <= 18 && v >= pow10_above[n - 1])
        n++;
    return n;
}

/* the n = dec_len(v) decimal digits of v (>= 0) at out, last digit first */
static void
put_dec(unsigned char *out, long long v, size_t n)
{
    do {
        out[--n] = (unsigned char)('0' + (int)(v % 10));
        v /= 10;
    } while (n > 0);
}

NATSCODEC_API size_t
natscodec_pub_frame_len(size_t subject_len, size_t reply_len, const unsigned char *header,
                        size_t header_len, size_t data_len)
{
    size_t size = (header != NULL ? header_len : 0) + data_len;
    size_t n = 4 + subject_len + 1 + reply_len + 1 + dec_len((long long)size) + 2 + size + 2;
    if (header != NULL)
        n += 1 + dec_len((long long)header_len) + 1;
    return n;
}

/* "PUB subject reply size\r\n" or "HPUB subject reply hsize size\r\n" */
static unsigned char *
pub_line(unsigned char *out, const char *subject, size_t subject_len,
         const char *reply, size_t reply_len, long long hsize, long long size)
{
    unsigned char *w = out;
    size_t d;
    if (hsize >= 0) {
        memcpy(w, "HPUB ", 5);
        w += 5;
    } else {
        memcpy(w, "PUB ", 4);
        w += 4;
    }
    memcpy(w, subject, subject_len);
    w += subject_len;
    *w++ = ' ';
    if (reply_len) {
        memcpy(w, reply, reply_len);
        w += reply_len;
    }
    *w++ = ' ';
    if (hsize >= 0) {
        d = dec_len(hsize);
        put_dec(w, hsize, d);
        w += d;
        *w++ = ' ';
    }
    d = dec_len(size);
    put_dec(w, size, d);
    w += d;
    *w++ = '\r';
    *w++ = '\n';
    return w;
}

NATSCODEC_API unsigned char *
natscodec_pub_frame(unsigned char *out, const char *subject, size_t subject_len,
                    const char *reply, size_t reply_len, const unsigned char *header,
                    size_t header_len, const unsigned char *data, size_t data_len)
{
    unsigned char *w;
    if (header == NULL) {
        w = pub_line(out, subject, subject_len, reply, reply_len, -1, (long long)data_len);
    } else {
        w = pub_line(out, subject, subject_len, reply, reply_len, (long long)header_len,
                     (long long)(header_len + data_len));
        memcpy(w, header, header_len);
        w += header_len;
    }
    memcpy(w, data, data_len);
    w += data_len;
    *w++ = '\r';
    *w++ = '\n';
    return w;
}

NATSCODEC_API void
natscodec_spin_init(natscodec_spin *s)
{
    memset(s, 0, sizeof *s);
}

NATSCODEC_API int
natscodec_spin_should_try(natscodec_spin *s)
{
    if (s->skip > 0) {
        s->skip--;
        s->skipped++;
        return 0;
    }
    return 1;
}

NATSCODEC_API void
natscodec_spin_caught(natscodec_spin *s)
{
    s->misses = 0;
    s->caught++;
}

NATSCODEC_API void
natscodec_spin_missed(natscodec_spin *s)
{
    int m = s->misses;
    s->missed++;
    if (m > 0)
        s->skip = (10 << (m - 1)) < 1000 ? (10 << (m - 1)) : 1000;
    s->misses = m < 8 ? m + 1 : 8;
}

/* ------------------------------------------------------------ WebSocket frames */

enum {
    WS_BAD_OPCODE = 1, WS_BAD_RSV, WS_BAD_MASKED, WS_BAD_CTL_FRAGMENT, WS_BAD_CTL_LONG, WS_BAD_LENGTH,
    WS_BAD_CONTINUATION, WS_BAD_INTERLEAVED
};

NATSCODEC_API const char *
natscodec_ws_reason(int bad)
{
    switch (bad) {
    case WS_BAD_OPCODE: return "a frame with a reserved opcode";
    case WS_BAD_RSV: return "a frame with reserved bits set (no extension was agreed)";
    case WS_BAD_MASKED: return "a masked frame from the server";
    case WS_BAD_CTL_FRAGMENT: return "a fragmented control frame";
    case WS_BAD_CTL_LONG: return "a control frame longer than 125 bytes";
    case WS_BAD_LENGTH: return "a frame length not in its shortest form, or past 2**63";
    case WS_BAD_CONTINUATION: return "a continuation frame outside a fragmented message";
    case WS_BAD_INTERLEAVED: return "a new data frame inside a fragmented message";
    }
    return "a bad frame";
}

/* The header of the frame at p[0:avail): 1 read (*op, *fin, *hl its length,
 * *len the payload's), 0 not all here yet, or -WS_BAD_... */
static int
ws_header(const unsigned char *p, size_t avail, unsigned *op, int *fin, size_t *hl, unsigned long long *len)
{
    unsigned char b0, b1;
    if (avail < 2)
        return 0;
    b0 = p[0];
    b1 = p[1];
    *op = b0 & 0x0f;
    *fin = (b0 & 0x80) != 0;
    if ((*op > 2 && *op < 8) || *op > 10)
        return -WS_BAD_OPCODE;
    if (*op >= 8 && !*fin)
        return -WS_BAD_CTL_FRAGMENT;
    if (*op >= 8 && (b1 & 0x7f) > 125)
        return -WS_BAD_CTL_LONG;
    if (b0 & 0x70)
        return -WS_BAD_RSV;
    if (b1 & 0x80)
        return -WS_BAD_MASKED;
    *len = b1 & 0x7f;
    *hl = 2;
    if (*len == 126) {
        if (avail < 4)
            return 0;
        *len = ((unsigned long long)p[2] << 8) | p[3];
        *hl = 4;
        if (*len < 126)
            return -WS_BAD_LENGTH;
    } else if (*len == 127) {
        int i;
        if (avail < 10)
            return 0;
        *len = 0;
        for (i = 2; i < 10; i++)
            *len = (*len << 8) | p[i];
        *hl = 10;
        if (*len < 65536 || (*len >> 63))
            return -WS_BAD_LENGTH;
    }
    return 1;
}

NATSCODEC_API int
natscodec_ws_unframe(natscodec_ws *ws, const unsigned char *in, size_t n, unsigned long long max,
                     unsigned char *out, size_t *out_len, size_t *used)
{
    size_t pos = 0, o = 0, hl;
    int r = NATSCODEC_WS_MORE, h, fin;
    unsigned op;
    unsigned long long len;
    for (;;) {
        if (ws->left > 0) {
            size_t take = n - pos;
            if ((unsigned long long)take > ws->left)
                take = (size_t)ws->left;
            if (out + o != in + pos)
                memmove(out + o, in + pos, take);
            o += take;
            pos += take;
            ws->left -= take;
            if (ws->left > 0)
                break;
        }
        h = ws_header(in + pos, n - pos, &op, &fin, &hl, &len);
        if (h <= 0) {
            if (h < 0) {
                ws->bad = -h;
                r = NATSCODEC_WS_BAD;
            }
            break;
        }
        if (op >= 8) {
            if (n - pos < hl + len)
                break;    /* a control frame is taken whole */
            ws->ctl_at = pos;
            ws->ctl_len = hl + (size_t)len;
            pos += ws->ctl_len;
            r = NATSCODEC_WS_CONTROL;
            break;
        }
        if (len > max) {
            ws->claimed = len;
            r = NATSCODEC_WS_TOOBIG;
            break;
        }
        if ((op == 0) != (ws->in_msg != 0)) {
            ws->bad = op == 0 ? WS_BAD_CONTINUATION : WS_BAD_INTERLEAVED;
            r = NATSCODEC_WS_BAD;
            break;
        }
        ws->in_msg = !fin;
        ws->left = len;
        pos += hl;
    }
    *out_len = o;
    *used = pos;
    return r;
}

NATSCODEC_API size_t
natscodec_ws_frame_len(size_t n)
{
    return n + 6 + (n > 125 ? 2 : 0) + (n > 65535 ? 6 : 0);
}

NATSCODEC_API size_t
natscodec_ws_head(unsigned char *out, size_t n, const unsigned char key[4])
{
    size_t h = 0;
    out[h++] = 0x82;
    if (n <= 125) {
        out[h++] = (unsigned char)(0x80 | n);
    } else if (n <= 65535) {
        out[h++] = 0x80 | 126;
        out[h++] = (unsigned char)(n >> 8);
        out[h++] = (unsigned char)n;
    } else {
        int s;
        out[h++] = 0x80 | 127;
        for (s = 56; s >= 0; s -= 8)
            out[h++] = (unsigned char)((unsigned long long)n >> s);
    }
    memcpy(out + h, key, 4);
    return h + 4;
}

NATSCODEC_API void
natscodec_ws_mask(unsigned char *out, const unsigned char *data, size_t n, const unsigned char key[4])
{
    size_t i = 0;
    uint64_t k8;
    /* the key repeats every 4 bytes: eight at a time, then the rest */
    memcpy(&k8, key, 4);
    memcpy((unsigned char *)&k8 + 4, key, 4);
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, data + i, 8);
        w ^= k8;
        memcpy(out + i, &w, 8);
    }
    for (; i < n; i++)
        out[i] = data[i] ^ key[i & 3];
}

NATSCODEC_API unsigned char *
natscodec_ws_frame(unsigned char *out, const unsigned char *data, size_t n, const unsigned char key[4])
{
    out += natscodec_ws_head(out, n, key);
    natscodec_ws_mask(out, data, n, key);
    return out + n;
}
