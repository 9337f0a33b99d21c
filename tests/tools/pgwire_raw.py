#!/usr/bin/env python3
"""Raw PostgreSQL protocol 3.0 against `tidemark run --pg` (issue 20; test tool
for tests/integration/test_pgwire.sh): what libpq cannot send.

Usage: pgwire_raw.py PORT CHECK [ARG]
  suspend        Execute with a row limit: PortalSuspended after 2 rows, the rest
                 on the next Execute, then CommandComplete "SELECT 5"
  skip           an error in Parse: Bind and Execute skipped until Sync
  hostile        bad startup packets, a message past the cap, an unknown
                 message type, a truncated message: clean errors, and the
                 server still answers a query after each
  cap N          N connections held open: the next gets SQLSTATE 53300
  password KEY   cleartext auth (--pg-auth password): a wrong password gets
                 28P01, the right one gets in
Prints one line per check and exits non-zero on the first surprise.
"""
import socket
import struct
import time
import sys

PORT = int(sys.argv[1])


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    return s


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            return None
        b += c
    return b


def read_msg(s):
    h = recv_exact(s, 5)
    if h is None:
        return None, None
    t, n = h[:1], struct.unpack("!I", h[1:])[0]
    body = recv_exact(s, n - 4)
    return t, body


def msg(t, body=b""):
    return t + struct.pack("!I", len(body) + 4) + body


def startup(s, user=b"raw", extra=b""):
    body = struct.pack("!I", 196608) + b"user\0" + user + b"\0database\0x\0" + extra + b"\0"
    s.sendall(struct.pack("!I", len(body) + 4) + body)


def fields(body):
    """An ErrorResponse's fields as a dict."""
    out = {}
    for f in body.split(b"\0"):
        if f:
            out[f[:1].decode()] = f[1:].decode()
    return out


def until_ready(s):
    """Messages up to ReadyForQuery, as (type, body) pairs."""
    got = []
    while True:
        t, b = read_msg(s)
        if t is None:
            fail("the server closed the connection")
        got.append((t, b))
        if t == b"Z":
            return got


def ready(user=b"raw"):
    s = connect()
    startup(s, user)
    got = until_ready(s)
    if got[0] != (b"R", struct.pack("!I", 0)):
        fail("no AuthenticationOk: %r" % got[:1])
    return s


def query_ok(s, sql=b"SELECT 42 AS x"):
    s.sendall(msg(b"Q", sql + b"\0"))
    got = until_ready(s)
    rows = [b for t, b in got if t == b"D"]
    if not rows or got[-1][0] != b"Z":
        fail("query after the check: %r" % got)
    return got


def error_then_closed(s, code):
    t, b = read_msg(s)
    if t != b"E":
        fail("expected an ErrorResponse, got %r %r" % (t, b))
    f = fields(b)
    if f.get("C") != code:
        fail("SQLSTATE %s, want %s (%s)" % (f.get("C"), code, f.get("M")))
    t, _ = read_msg(s)
    if t is not None:
        fail("the connection stayed open after a FATAL error")
    return f


check = sys.argv[2]
if check == "suspend":
    s = ready()
    s.sendall(msg(b"P", b"\0SELECT id FROM events WHERE id <= $1 ORDER BY id\0" + struct.pack("!h", 0))
              + msg(b"B", b"\0\0" + struct.pack("!hh", 0, 1) + struct.pack("!i", 1) + b"5" + struct.pack("!h", 0))
              + msg(b"E", b"\0" + struct.pack("!I", 2)) + msg(b"E", b"\0" + struct.pack("!I", 2))
              + msg(b"E", b"\0" + struct.pack("!I", 0)) + msg(b"S"))
    got = until_ready(s)
    kinds = b"".join(t for t, _ in got).decode()
    if kinds != "12DDsDDsDCZ":
        fail("suspend: messages %s" % kinds)
    tag = [b for t, b in got if t == b"C"][0]
    if tag != b"SELECT 5\0":
        fail("suspend: tag %r" % tag)
    ids = [int(b[6:]) for t, b in got if t == b"D"]
    if ids != [1, 2, 3, 4, 5]:
        fail("suspend: rows %r" % ids)
    # Another statement while a portal is suspended (it holds the connection's session): it runs
    # in a session of the pool, which goes back to the pool afterwards.
    s.sendall(msg(b"P", b"\0SELECT id FROM events WHERE id <= $1 ORDER BY id\0" + struct.pack("!h", 0))
              + msg(b"B", b"\0\0" + struct.pack("!hh", 0, 1) + struct.pack("!i", 1) + b"3" + struct.pack("!h", 0))
              + msg(b"E", b"\0" + struct.pack("!I", 2))
              + msg(b"P", b"s2\0SELECT 42 AS x\0" + struct.pack("!h", 0))
              + msg(b"B", b"p2\0s2\0" + struct.pack("!hhh", 0, 0, 0))
              + msg(b"E", b"p2\0" + struct.pack("!I", 0))
              + msg(b"E", b"\0" + struct.pack("!I", 0)) + msg(b"S"))
    got = until_ready(s)
    kinds = b"".join(t for t, _ in got).decode()
    if kinds != "12DDs12DCDCZ":
        fail("suspend with another statement: messages %s" % kinds)
    query_ok(s)
    print("suspend: 2 rows, PortalSuspended, 2 rows, PortalSuspended, 1 row, SELECT 5; "
          "another statement while suspended")
elif check == "pipeline":
    # The server reads its input through a buffer (conn.c read_full): messages that arrive
    # together, one that arrives in pieces, and one longer than the buffer that starts inside it.
    s = ready()
    n = 300
    batch = b""
    for i in range(n):
        batch += (msg(b"P", b"\0SELECT $1::INTEGER * 2 AS x\0" + struct.pack("!h", 0))
                  + msg(b"B", b"\0\0" + struct.pack("!hh", 0, 1) + struct.pack("!i", len(str(i)))
                        + str(i).encode() + struct.pack("!h", 0))
                  + msg(b"E", b"\0" + struct.pack("!I", 0)) + msg(b"S"))
    s.sendall(batch)
    for i in range(n):
        got = until_ready(s)
        rows = [b for t, b in got if t == b"D"]
        if len(rows) != 1 or rows[0][6:] != str(2 * i).encode():
            fail("pipeline: statement %d answered %r" % (i, got))
    # A 40 KB query (past the 16 KB buffer) between two short ones, in one send.
    pad = b"/*" + b"x" * 40000 + b"*/"
    s.sendall(msg(b"Q", b"SELECT 1 AS a\0") + msg(b"Q", b"SELECT 2 " + pad + b" AS b\0")
              + msg(b"Q", b"SELECT 3 AS c\0"))
    for want in (b"1", b"2", b"3"):
        got = until_ready(s)
        rows = [b for t, b in got if t == b"D"]
        if len(rows) != 1 or rows[0][6:] != want:
            fail("pipeline: long query, answer %r, want %r" % (got, want))
    # A message in pieces: its header split, then its body a byte at a time.
    m = msg(b"Q", b"SELECT 4 AS d\0")
    for k in (m[:3], m[3:5]) + tuple(m[i:i + 1] for i in range(5, len(m))):
        s.sendall(k)
        time.sleep(0.002)
    got = until_ready(s)
    rows = [b for t, b in got if t == b"D"]
    if len(rows) != 1 or rows[0][6:] != b"4":
        fail("pipeline: a message in pieces answered %r" % got)
    print("pipeline: %d extended statements in one send answered in order; a 40 KB query between "
          "two short ones; a message sent a byte at a time" % n)
elif check == "skip":
    s = ready()
    s.sendall(msg(b"P", b"\0SELEC 1\0" + struct.pack("!h", 0))
              + msg(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 0))
              + msg(b"E", b"\0" + struct.pack("!I", 0)) + msg(b"S"))
    got = until_ready(s)
    kinds = b"".join(t for t, _ in got).decode()
    if kinds != "EZ" or fields(got[0][1]).get("C") != "42601":
        fail("skip: %s %r" % (kinds, got))
    query_ok(s)
    print("skip: one ErrorResponse (42601), Bind and Execute skipped until Sync, then served")
elif check == "hostile":
    # A startup packet shorter than its header.
    s = connect()
    s.sendall(struct.pack("!I", 3))
    error_then_closed(s, "08P01")
    # One longer than PostgreSQL allows.
    s = connect()
    s.sendall(struct.pack("!I", 1 << 30))
    error_then_closed(s, "08P01")
    # Protocol 2.0.
    s = connect()
    body = struct.pack("!I", 131072) + b"user\0x\0\0"
    s.sendall(struct.pack("!I", len(body) + 4) + body)
    error_then_closed(s, "0A000")
    # No user name.
    s = connect()
    body = struct.pack("!I", 196608) + b"database\0x\0\0"
    s.sendall(struct.pack("!I", len(body) + 4) + body)
    error_then_closed(s, "08P01")
    # SSLRequest and GSSENCRequest answered 'N', then a normal startup.
    s = connect()
    s.sendall(struct.pack("!II", 8, 80877103))
    if recv_exact(s, 1) != b"N":
        fail("SSLRequest not answered N")
    s.sendall(struct.pack("!II", 8, 80877104))
    if recv_exact(s, 1) != b"N":
        fail("GSSENCRequest not answered N")
    startup(s)
    until_ready(s)
    query_ok(s)
    # A message past the cap: refused from its length, before its body.
    s = ready()
    s.sendall(b"Q" + struct.pack("!I", 512 << 20))
    error_then_closed(s, "54000")
    # An unknown message type.
    s = ready()
    s.sendall(msg(b"z", b"x"))
    error_then_closed(s, "08P01")
    # A malformed Bind (more values than bytes).
    s = ready()
    s.sendall(msg(b"B", b"\0\0" + struct.pack("!hh", 0, 30000)))
    error_then_closed(s, "08P01")
    # A truncated message, then the client leaves.
    s = ready()
    s.sendall(b"Q" + struct.pack("!I", 100) + b"SELECT")
    s.close()
    # The server still serves.
    query_ok(ready())
    print("hostile: short and long startup packets, protocol 2, no user, a huge message, an "
          "unknown type, a malformed Bind, a truncated message: clean errors; still serving")
elif check == "cap":
    n = int(sys.argv[3])
    held = [ready() for _ in range(n)]
    s = connect()
    startup(s)
    f = error_then_closed(s, "53300")
    for h in held:
        h.close()
    print("cap: %d connections held, the next refused: %s" % (n, f.get("M")))
elif check == "password":
    key = sys.argv[3].encode()
    s = connect()
    startup(s)
    t, b = read_msg(s)
    if t != b"R" or struct.unpack("!I", b)[0] != 3:
        fail("no AuthenticationCleartextPassword: %r %r" % (t, b))
    s.sendall(msg(b"p", b"wrong\0"))
    error_then_closed(s, "28P01")
    s = connect()
    startup(s)
    read_msg(s)
    s.sendall(msg(b"p", key + b"\0"))
    got = until_ready(s)
    if got[0] != (b"R", struct.pack("!I", 0)):
        fail("the right password: %r" % got[:1])
    keys = [b for t, b in got if t == b"K"]
    if len(keys) != 1 or len(keys[0]) != 8:
        fail("no BackendKeyData")
    params = dict(tuple(b.split(b"\0")[:2]) for t, b in got if t == b"S")
    for k, v in ((b"client_encoding", b"UTF8"), (b"DateStyle", b"ISO, MDY"), (b"TimeZone", b"UTC"),
                 (b"integer_datetimes", b"on"), (b"standard_conforming_strings", b"on")):
        if params.get(k) != v:
            fail("ParameterStatus %s = %r" % (k, params.get(k)))
    query_ok(s)
    print("password: wrong 28P01, right one in; BackendKeyData and ParameterStatus sent")
else:
    fail("unknown check " + check)
