#!/usr/bin/env python3
"""An HTTP proxy for tests that injects faults on command, in front of a
storage emulator that has none of its own (Azurite).

  fault_proxy.py --target HOST:PORT
prints "listening PORT", then reads commands on stdin, one a line, and
answers "ok" to each:
  fail STATUS COUNT   the next COUNT requests get STATUS with an error body
                      in Azure's form (<Error><Code>…, and the
                      x-ms-error-code header), without reaching the target
  reset COUNT         the next COUNT requests: the connection is closed
                      before any response
  cut BYTES           the next GET's response: its headers as the target sent
                      them, then only BYTES bytes of the body, then the
                      connection is closed
  clear               cancels pending faults
Everything else is forwarded as it is (method, path, headers, body) over a
new connection to the target; the target's response comes back unchanged.
The proxy exits when stdin closes.
"""
import argparse
import http.client
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
FAULTS = {"fail": [], "reset": 0, "cut": []}
ARGS = None
CODES = {500: "InternalError", 503: "ServerBusy", 429: "TooManyRequests", 408: "OperationTimedOut",
         403: "AuthenticationFailed", 404: "BlobNotFound"}


def take(method):
    with LOCK:
        if FAULTS["reset"] > 0:
            FAULTS["reset"] -= 1
            return ("reset", None)
        if FAULTS["fail"]:
            return ("fail", FAULTS["fail"].pop(0))
        if method == "GET" and FAULTS["cut"]:
            return ("cut", FAULTS["cut"].pop(0))
    return (None, None)


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        kind, arg = take(self.command)
        if kind == "reset":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind == "fail":
            code = CODES.get(arg, "InjectedError")
            data = (f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code>'
                    f"<Message>injected by fault_proxy.py</Message></Error>").encode()
            self.send_response(arg)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-ms-error-code", code)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            return
        host, port = ARGS.target.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "host")}
        headers["Host"] = ARGS.target
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length", "date", "server"):
                self.send_header(k, v)
        # HEAD: the target's length of the body it did not send.
        length = resp.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length or str(len(data)))
        self.end_headers()
        conn.close()
        if kind == "cut":
            self.wfile.write(data[:arg])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = handle_any


def commands():
    for line in sys.stdin:
        parts = line.split()
        with LOCK:
            if parts[:1] == ["fail"] and len(parts) == 3:
                FAULTS["fail"].extend([int(parts[1])] * int(parts[2]))
            elif parts[:1] == ["reset"] and len(parts) == 2:
                FAULTS["reset"] += int(parts[1])
            elif parts[:1] == ["cut"] and len(parts) == 2:
                FAULTS["cut"].append(int(parts[1]))
            elif parts == ["clear"]:
                FAULTS.update({"fail": [], "reset": 0, "cut": []})
            else:
                print(f"bad command: {line.strip()}", flush=True)
                continue
        print("ok", flush=True)
    os._exit(0)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True)
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    threading.Thread(target=commands, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
