/*
 * natscodec.h: the NATS wire protocol in C, written once for every C path of
 * tclnats_py (natsproto.c: the Python parser's accelerator, the asyncio
 * face's PUB frames and the Spark column scanner; tclfast.c: the Tcl face's
 * readable handler and publish method), and the spin back-off policy of both
 * faces' waits for a reply (tclcross_wait.c await_var, aio/spin.py through
 * natsproto.c).  Plain C: no Python or Tcl header.
 *
 * The scanner decodes only what it is sure of; engine/protocol.py's Parser
 * is the reference, which decodes (or rejects, with its own errors)
 * everything the scanner leaves.  tests/engine/test_codec_property.py holds
 * the two together on random streams split at random points.
 */
#ifndef TCLNATS_NATSCODEC_H
#define TCLNATS_NATSCODEC_H

#include <stddef.h>

/* Each C file that uses the codec compiles it in, "#define NATSCODEC_API
 * static" then "#include "natscodec.c"", so that the compiler inlines it
 * into the per-message loops (as a unit of its own it costs 1-2% more
 * instructions per message on the Tcl face's read and publish paths). */
#ifndef NATSCODEC_API
#define NATSCODEC_API
#endif
/* the scanner's per-frame functions; a file that includes the codec may
 * define it to force them inline into its loop */
#ifndef NATSCODEC_HOT
#define NATSCODEC_HOT
#endif

/* what natscodec_scan found at pos */
enum natscodec_kind {
    NATSCODEC_NEED_LINE,    /* no complete control line yet (no CRLF) */
    NATSCODEC_NEED_PAYLOAD, /* a plain MSG/HMSG line whose payload is not all here (the
                               frame's payload and size are set: it ends at payload + size + 2) */
    NATSCODEC_UNSURE,       /* not for the scanner: a lone CR, a MSG/HMSG line that is
                               not plain (other spacing, bytes, counts, sizes), a payload
                               not ended by CRLF, a line starting with m or h */
    NATSCODEC_MSG,          /* a MSG or HMSG frame (hsize is -1 for MSG) */
    NATSCODEC_PING,
    NATSCODEC_PONG,
    NATSCODEC_OK,           /* +OK */
    NATSCODEC_OTHER         /* any other complete line (INFO, -ERR, ...): the reference's */
};

/* one frame: spans are offsets into the scanned buffer */
typedef struct {
    size_t subject, subject_len;
    size_t reply, reply_len;    /* reply_len 0: no reply */
    size_t sid_at, sid_len;     /* the sid's digits */
    long long sid;
    long long hsize;            /* the header block's length; -1: MSG (no headers) */
    long long size;             /* header block + payload */
    size_t payload;             /* where the header block (then the payload) starts */
    size_t line_end;            /* the control line's CR */
    size_t next;                /* the byte after the frame (or after the line) */
} natscodec_frame;

/* The frame at buf[pos:n).  max_size: a larger MSG/HMSG size is UNSURE. */
NATSCODEC_API int natscodec_scan(const unsigned char *buf, size_t pos, size_t n, long long max_size,
                   natscodec_frame *fr);

/* The PUB frame (header NULL) or HPUB frame of a message at out, which has
 * room for natscodec_pub_frame_len() bytes; returns the byte after it.  The
 * control line is "PUB subject reply size\r\n" (HPUB: "HPUB subject reply
 * hsize size\r\n"), the reply slot written even when empty as nats-tcl
 * does, then the header block, the payload and CRLF: protocol.encode_pub's
 * bytes.  The caller has checked subject and reply. */
NATSCODEC_API size_t natscodec_pub_frame_len(size_t subject_len, size_t reply_len, const unsigned char *header,
                               size_t header_len, size_t data_len);
NATSCODEC_API unsigned char *natscodec_pub_frame(unsigned char *out, const char *subject, size_t subject_len,
                                   const char *reply, size_t reply_len, const unsigned char *header,
                                   size_t header_len, const unsigned char *data, size_t data_len);

/*
 * The spin back-off: whether a wait for a reply polls without sleeping
 * first.  One reply late for the spin changes nothing; after two in a row
 * the next 10 waits do not spin, then 20, 40 ... at most 1000 while misses
 * follow one another; a reply caught while spinning starts over.  One late
 * reply alone must not stop the spinning: on a shared machine an occasional
 * reply is late, and skipping 10 spins for it costs more than it saves.
 */
typedef struct {
    int skip;                   /* waits left that do not spin */
    int misses;                 /* spins in a row that ran out (at most 8) */
    long long caught, missed, skipped;   /* counts, for tests and tuning */
} natscodec_spin;

NATSCODEC_API void natscodec_spin_init(natscodec_spin *s);
NATSCODEC_API int natscodec_spin_should_try(natscodec_spin *s);   /* 0: this wait does not spin (counted) */
NATSCODEC_API void natscodec_spin_caught(natscodec_spin *s);
NATSCODEC_API void natscodec_spin_missed(natscodec_spin *s);

/*
 * WebSocket (RFC 6455) data frames, the client's side: the server's frames
 * (unmasked) unframed, the client's framed (masked).  engine/websocket.py
 * uses them when no extension (permessage-deflate) was agreed; wsproto does
 * the HTTP upgrade, the control frames' contents and compressed streams,
 * and is the reference the property tests hold these to.
 */
enum natscodec_ws_stop {
    NATSCODEC_WS_MORE,      /* every data frame taken: nothing, or a frame's first bytes, left */
    NATSCODEC_WS_CONTROL,   /* a whole control frame (ping, pong, close) at ctl_at, ctl_len bytes */
    NATSCODEC_WS_TOOBIG,    /* a data frame claims more than max bytes (claimed) */
    NATSCODEC_WS_BAD        /* a frame RFC 6455 forbids here: natscodec_ws_reason(bad) */
};

/* the unframer's state between calls */
typedef struct {
    unsigned long long left;    /* payload bytes of the current data frame still to come */
    int in_msg;                 /* a data frame without FIN came: continuations follow */
    int bad;                    /* NATSCODEC_WS_BAD: why */
    unsigned long long claimed; /* NATSCODEC_WS_TOOBIG: the length the frame claimed */
    size_t ctl_at, ctl_len;     /* NATSCODEC_WS_CONTROL: the frame's bytes in the input */
} natscodec_ws;

/* the longest frame the unframer may leave unconsumed (a control frame
 * that is not all here yet: 2 + 125 bytes) */
#define NATSCODEC_WS_HOLD 127

/* Unframes in[0:n): the payloads of its data frames are written at out
 * (at most n bytes; out may be in itself: it never runs ahead of the
 * input), *out_len their length, *used the input bytes consumed.  Stops at
 * the first control frame (consumed: the caller hands it to wsproto, then
 * calls again with the rest) or bad frame (state is then void); a frame's
 * incomplete first bytes (at most NATSCODEC_WS_HOLD) stay unconsumed. */
NATSCODEC_API int natscodec_ws_unframe(natscodec_ws *ws, const unsigned char *in, size_t n, unsigned long long max,
                                       unsigned char *out, size_t *out_len, size_t *used);
NATSCODEC_API const char *natscodec_ws_reason(int bad);

/* the length of the binary frame of a payload of n bytes (masked) */
NATSCODEC_API size_t natscodec_ws_frame_len(size_t n);
/* The header of that frame (FIN, binary, masked with key) at out, which has
 * room for NATSCODEC_WS_HEAD_MAX bytes; returns its length. */
#define NATSCODEC_WS_HEAD_MAX 14
NATSCODEC_API size_t natscodec_ws_head(unsigned char *out, size_t n, const unsigned char key[4]);
/* out[i] = data[i] ^ key[i % 4] for i < n (out may be data) */
NATSCODEC_API void natscodec_ws_mask(unsigned char *out, const unsigned char *data, size_t n,
                                     const unsigned char key[4]);
/* The binary frame (FIN, masked with key) of data[0:n) at out, which has
 * room for natscodec_ws_frame_len(n) bytes; returns the byte after it. */
NATSCODEC_API unsigned char *natscodec_ws_frame(unsigned char *out, const unsigned char *data, size_t n,
                                                const unsigned char key[4]);

#endif
