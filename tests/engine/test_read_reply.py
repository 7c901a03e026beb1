"""natsproto.c read_reply: the blocking face's read of one request's reply
(sync/threads.py SyncIO.round_trip), fed through a socket pair: exactly the
reply comes back in parts, anything else as the bytes read, for the engine."""

import socket
import struct
import sys
import threading
import time

import pytest

from tclnats_py.engine.protocol import compiled

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(compiled("read_reply") is None, reason="the accelerator (POSIX) is not built")]

REPLY = "_INBOX.abc.42"
SID = 7


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("@ll", 0, 200_000))
    yield a, b
    a.close()
    b.close()


def read(sock, sid=SID, reply=REPLY, budget=5.0):
    return compiled("read_reply")(sock.fileno(), sid, reply, budget)


def msg(subject=REPLY, sid=SID, data=b"pong", reply=None, header=None) -> bytes:
    r = (reply.encode() + b" ") if reply else b""
    if header is None:
        return b"MSG %s %d %s%d\r\n%s\r\n" % (subject.encode(), sid, r, len(data), data)
    return b"HMSG %s %d %s%d %d\r\n%s%s\r\n" % (subject.encode(), sid, r, len(header), len(header) + len(data),
                                              header, data)


def test_exactly_the_reply_comes_back_in_parts(pair):
    a, b = pair
    frame = msg(reply="back.to")
    b.sendall(frame)
    assert read(a) == ("back.to", None, b"pong", len(frame))


def test_a_reply_with_headers(pair):
    a, b = pair
    frame = msg(data=b"", header=b"NATS/1.0 503\r\n\r\n")
    b.sendall(frame)
    assert read(a) == (None, b"NATS/1.0 503\r\n\r\n", b"", len(frame))


@pytest.mark.parametrize("data", [
    msg(sid=SID + 1),                       # another subscription
    msg(subject=REPLY + "1"),               # another request's reply
    msg() + msg(subject="other"),           # the reply and more
    msg(subject="other") + msg(),           # something before it
    b"PING\r\n" + msg(),                    # a PING first
    b"PING\r\n",
    b"-ERR 'Stale Connection'\r\n",
    b"msg %s %d 4\r\npong\r\n" % (REPLY.encode(), SID),   # not a plain line: the Python parser's
])
def test_anything_else_is_the_bytes_read(pair, data):
    a, b = pair
    b.sendall(data)
    time.sleep(0.05)  # (all of it in one read)
    assert read(a) == data


def test_a_reply_split_across_reads_is_read_whole(pair):
    a, b = pair
    frame = msg(data=b"x" * 100_000)  # past the first read's buffer too
    cuts = [0, 3, 20, 5000, 70_000, len(frame)]

    def trickle():
        for i, j in zip(cuts, cuts[1:]):
            b.sendall(frame[i:j])
            time.sleep(0.02)
    t = threading.Thread(target=trickle)
    t.start()
    got = read(a)
    t.join()
    assert got == (None, None, b"x" * 100_000, len(frame))


def test_a_frame_cut_short_past_the_budget_is_handed_over(pair):
    a, b = pair
    b.sendall(msg()[:10])
    t0 = time.monotonic()
    assert read(a, budget=0.0) == msg()[:10]
    assert time.monotonic() - t0 < 0.15  # no second read that waits SO_RCVTIMEO


def test_a_frame_cut_short_until_the_wait_ends(pair):
    a, b = pair
    b.sendall(msg()[:10])
    assert read(a, budget=1.0) == msg()[:10]  # the second read waited SO_RCVTIMEO (0.2 s)


def test_nothing_within_the_sockets_timeout(pair):
    a, _ = pair
    assert read(a) is None


def test_the_end_of_the_stream(pair):
    a, b = pair
    b.close()
    assert read(a) == b""


def test_the_end_of_the_stream_after_part_of_a_frame(pair):
    a, b = pair
    b.sendall(msg()[:10])
    b.close()
    assert read(a) == msg()[:10]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a reset's errno text: Linux")
def test_a_failed_socket_says_why():
    srv = socket.create_server(("127.0.0.1", 0))
    a = socket.create_connection(srv.getsockname())
    b, _ = srv.accept()
    b.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    b.close()  # a reset
    time.sleep(0.05)
    try:
        assert read(a) == "[Errno 104] Connection reset by peer"
    finally:
        a.close()
        srv.close()


def test_bad_arguments():
    with pytest.raises(TypeError):
        compiled("read_reply")(0, SID, b"not a str", 1.0)
    with pytest.raises(TypeError):
        compiled("read_reply")(0, SID)
