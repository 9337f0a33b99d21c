#!/usr/bin/python3
"""An Iceberg REST catalog that authenticates and vends credentials, for tests.

It serves the routes tidemark uses, over a file-system warehouse (the table
NS.T is DIR/NS/T, its current metadata the highest metadata/vN.metadata.json):
  GET  /v1/config                                  {"defaults": {}, "overrides": {"prefix"}}
  GET  /v1/{prefix}/namespaces/{ns}/tables/{table} {"metadata-location", "metadata", "config"
                                                    [, "storage-credentials"]}
  POST /v1/oauth/tokens                            OAuth2 client credentials (RFC 6749 4.4)
and answers errors with the spec's models ({"error": {message, type, code}};
{"error", "error_description"} at the token endpoint).

Authentication, one of:
  --oauth ID:SECRET [--token-ttl S]   tokens are issued for grant_type=client_credentials
                      with this client id and secret (form-encoded; scope must be
                      "catalog" unless --scope says otherwise), expire after S seconds
                      (expires_in), and every other route wants a live one (401 else)
  --sigv4 KEY:SECRET [--sigv4-token T] [--sigv4-region R] [--sigv4-service S]
                      every request must carry an AWS SigV4 signature that botocore
                      (Debian's python3-botocore, AWS's own signer, not tidemark's
                      code) recomputes over the headers the request says it signed,
                      for service S (default glue) in region R (default us-east-1);
                      the path is signed as sent, percent-escapes encoded again, as
                      botocore does for every service but S3
  --token T           a fixed bearer token
Vended credentials (--vend KEY:SECRET:TOKEN --vend-endpoint URL [--vend-ttl-ms N]
[--vend-as config|storage-credentials] [--vend-prefix s3://BUCKET/]): a loadTable that
asks with "X-Iceberg-Access-Delegation: vended-credentials" gets s3.access-key-id,
s3.secret-access-key, s3.session-token, s3.session-token-expires-at-ms (now + N ms),
s3.endpoint, s3.region and s3.path-style-access, in "config" or as one storage
credential for the prefix. --metadata-location-root S3URL reports metadata-location
under that root (the table's files live there).

Commands on stdin, one per line, each answered with one line on stdout:
  revoke                      forget every issued token (their requests get 401)
  vend KEY SECRET TOKEN       vend these keys from now on
  vend-stale-once KEY SECRET TOKEN   the next loadTable vends these, then the current ones
  vend-none                   vend nothing (config without keys)
  vend-expired                vend keys whose expiry is already past
  vend-ttl MS                 expiry of the keys vended from now on
  stats                       "stats tokens=N loads=M refused=R"
The server prints "listening PORT" once it accepts connections (127.0.0.1 only) and
exits when stdin closes. --log appends one line per request (method, path, status,
how it authenticated); --tokens-file appends each issued token (tests look for them in
tidemark's output: they must never appear there).
"""
import argparse
import datetime
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ARGS = None
LOCK = threading.Lock()
STATE = {"tokens": {}, "issued": 0, "loads": 0, "refused": 0, "vend": None, "stale": None,
         "vend_none": False, "vend_expired": False, "vend_ttl_ms": None}


class Refused(Exception):
    def __init__(self, status, kind, message):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def log(line):
    if ARGS.log:
        with LOCK, open(ARGS.log, "a") as f:
            f.write(line + "\n")


def current_metadata(table_dir):
    mdir = os.path.join(table_dir, "metadata")
    if not os.path.isdir(mdir):
        return None
    best, best_n = None, -1
    for name in os.listdir(mdir):
        if name.startswith("v") and name.endswith(".metadata.json") and name[1:-14].isdigit():
            if int(name[1:-14]) > best_n:
                best_n, best = int(name[1:-14]), os.path.join(mdir, name)
    return best


def verify_sigv4(h, body):
    auth = h.headers.get("Authorization") or ""
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        raise Refused(401, "NotAuthorizedException", "Missing Authentication Token")
    fields = {}
    for part in auth[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = part.strip().partition("=")
        fields[k] = v
    try:
        key, date, region, service, term = fields["Credential"].split("/")
        signed, signature = fields["SignedHeaders"].split(";"), fields["Signature"]
    except (KeyError, ValueError):
        raise Refused(401, "NotAuthorizedException", "Incomplete signature")
    want_key, want_secret = ARGS.sigv4.split(":", 1)
    if key != want_key:
        raise Refused(401, "NotAuthorizedException", "The security token included in the request is invalid.")
    if service != ARGS.sigv4_service or region != ARGS.sigv4_region or term != "aws4_request":
        raise Refused(401, "NotAuthorizedException",
                      f"Credential should be scoped to region '{ARGS.sigv4_region}' and service '{ARGS.sigv4_service}'.")
    amz_date = h.headers.get("X-Amz-Date")
    if not amz_date or not amz_date.startswith(date):
        raise Refused(401, "NotAuthorizedException", "X-Amz-Date is missing or outside the credential's date.")
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    if abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) > 900:
        raise Refused(401, "NotAuthorizedException", "Signature expired.")
    for required in ("host", "x-amz-date"):
        if required not in signed:
            raise Refused(401, "NotAuthorizedException", f"'{required}' must be a signed header.")
    token = h.headers.get("X-Amz-Security-Token")
    if ARGS.sigv4_token and (token != ARGS.sigv4_token or "x-amz-security-token" not in signed):
        raise Refused(401, "NotAuthorizedException", "The security token included in the request is invalid.")
    headers = {}
    for name in signed:
        v = h.headers.get(name)
        if v is None:
            raise Refused(401, "NotAuthorizedException", f"Signed header '{name}' is missing.")
        headers[name] = v
    req = AWSRequest(method=h.command, url="http://" + headers["host"] + h.path, data=body, headers=headers)
    req.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(want_key, want_secret, token), service, region)
    expected = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    if expected != signature:
        raise Refused(401, "NotAuthorizedException",
                      "The request signature we calculated does not match the signature you provided.")
    return "sigv4"


def check_auth(h, body):
    if ARGS.sigv4:
        return verify_sigv4(h, body)
    got = h.headers.get("Authorization") or ""
    if ARGS.token:
        if got != "Bearer " + ARGS.token:
            raise Refused(401, "NotAuthorizedException", "Not authorized: missing or wrong bearer token")
        return "bearer"
    if ARGS.oauth:
        tok = got[len("Bearer "):] if got.startswith("Bearer ") else None
        with LOCK:
            exp = STATE["tokens"].get(tok) if tok else None
        if exp is None:
            raise Refused(401, "NotAuthorizedException", "Not authorized: unknown or revoked token")
        if exp and time.time() >= exp:
            raise Refused(401, "NotAuthorizedException", "Not authorized: the token expired")
        return "oauth2"
    return "none"


def vended_config():
    with LOCK:
        if STATE["vend_none"]:
            return None
        keys = STATE["stale"] or STATE["vend"]
        STATE["stale"] = None
        ttl = STATE["vend_ttl_ms"]
        expired = STATE["vend_expired"]
    if not keys:
        return None
    k, s, t = keys
    cfg = {"s3.access-key-id": k, "s3.secret-access-key": s, "s3.session-token": t,
           "s3.endpoint": ARGS.vend_endpoint, "s3.region": "us-east-1", "s3.path-style-access": "true"}
    now_ms = int(time.time() * 1000)
    if expired:
        cfg["s3.session-token-expires-at-ms"] = str(now_ms - 60000)
    elif ttl:
        cfg["s3.session-token-expires-at-ms"] = str(now_ms + ttl)
    return cfg


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_POST(self):
        body = self.body()
        path = urllib.parse.urlsplit(self.path).path
        if path != "/v1/oauth/tokens" or not ARGS.oauth:
            log(f"POST {path} 404")
            return self.send_json(404, json.dumps({"error": {"message": "no route", "type": "NoSuchRouteException", "code": 404}}))
        form = urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
        one = lambda k: (form.get(k) or [None])[0]
        cid, csecret = ARGS.oauth.split(":", 1)
        ctype = self.headers.get("Content-Type") or ""
        if not ctype.startswith("application/x-www-form-urlencoded") or one("grant_type") != "client_credentials":
            log("POST /v1/oauth/tokens 400 bad-request")
            return self.send_json(400, json.dumps({"error": "invalid_request", "error_description": "expected a form-encoded client_credentials grant"}))
        if one("client_id") != cid or one("client_secret") != csecret:
            with LOCK:
                STATE["refused"] += 1
            log("POST /v1/oauth/tokens 401 invalid_client")
            # A careless server echoes what it got: tidemark must not repeat the secret.
            return self.send_json(401, json.dumps({"error": "invalid_client",
                                                   "error_description": f"unknown client credentials for {one('client_id')}:{one('client_secret')}"}))
        if one("scope") != ARGS.scope:
            log(f"POST /v1/oauth/tokens 400 invalid_scope")
            return self.send_json(400, json.dumps({"error": "invalid_scope", "error_description": f"scope must be {ARGS.scope}"}))
        tok = "tok" + secrets.token_hex(16)
        with LOCK:
            STATE["issued"] += 1
            STATE["tokens"][tok] = time.time() + ARGS.token_ttl if ARGS.token_ttl else 0
        if ARGS.tokens_file:
            with LOCK, open(ARGS.tokens_file, "a") as f:
                f.write(tok + "\n")
        log(f"POST /v1/oauth/tokens 200 issued")
        answer = {"access_token": tok, "token_type": "bearer", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
        if ARGS.token_ttl:
            answer["expires_in"] = ARGS.token_ttl
        return self.send_json(200, json.dumps(answer))

    def do_GET(self):
        body = self.body()
        url = urllib.parse.urlsplit(self.path)
        try:
            how = check_auth(self, body)
        except Refused as e:
            with LOCK:
                STATE["refused"] += 1
            log(f"GET {url.path} {e.status} refused")
            return self.send_json(e.status, json.dumps({"error": {"message": e.message, "type": e.kind, "code": e.status}}))
        parts = [p for p in url.path.split("/") if p]
        if parts == ["v1", "config"]:
            log(f"GET {url.path} 200 auth={how}")
            return self.send_json(200, json.dumps({"defaults": {}, "overrides": {"prefix": ARGS.prefix} if ARGS.prefix else {}}))
        p = parts[1:]
        if ARGS.prefix:
            if not p or urllib.parse.unquote(p[0]) != ARGS.prefix:
                log(f"GET {url.path} 404")
                return self.send_json(404, json.dumps({"error": {"message": "unknown prefix", "type": "NoSuchRouteException", "code": 404}}))
            p = p[1:]
        if len(parts) < 1 or parts[0] != "v1" or len(p) != 4 or p[0] != "namespaces" or p[2] != "tables":
            log(f"GET {url.path} 404")
            return self.send_json(404, json.dumps({"error": {"message": "no route", "type": "NoSuchRouteException", "code": 404}}))
        levels = urllib.parse.unquote(p[1]).split("\x1f")
        table = urllib.parse.unquote(p[3])
        if any(l in ("..", "") or "/" in l for l in levels + [table]):
            return self.send_json(400, json.dumps({"error": {"message": "bad name", "type": "BadRequestException", "code": 400}}))
        f = current_metadata(os.path.join(ARGS.warehouse, *levels, table))
        if not f:
            log(f"GET {url.path} 404")
            return self.send_json(404, json.dumps({"error": {"message": f"Table does not exist: {'.'.join(levels + [table])}", "type": "NoSuchTableException", "code": 404}}))
        with open(f) as fh:
            metadata = fh.read()  # as written: json.loads would not round 64-bit ids, but keep the text
        loc = f
        if ARGS.metadata_location_root:
            loc = ARGS.metadata_location_root.rstrip("/") + "/metadata/" + os.path.basename(f)
        config = {"client.region": "us-east-1"}
        if ARGS.vend_endpoint:  # where the files are, whoever's keys read them
            config.update({"s3.endpoint": ARGS.vend_endpoint, "s3.path-style-access": "true"})
        creds = None
        delegation = self.headers.get("X-Iceberg-Access-Delegation") or ""
        vended = None
        if ARGS.vend and "vended-credentials" in [d.strip() for d in delegation.split(",")]:
            vended = vended_config()
        if vended and ARGS.vend_as == "storage-credentials":
            creds = [{"prefix": "s3://other-bucket/", "config": {"s3.access-key-id": "NOTTHIS", "s3.secret-access-key": "NOTTHIS"}},
                     {"prefix": ARGS.vend_prefix, "config": vended}]
        elif vended:
            config.update(vended)
        with LOCK:
            STATE["loads"] += 1
        log(f"GET {url.path} 200 auth={how} delegation={delegation or '-'} vended={'yes' if vended else 'no'}")
        text = '{"metadata-location": %s, "metadata": %s, "config": %s%s}' % (
            json.dumps(loc), metadata, json.dumps(config),
            (', "storage-credentials": ' + json.dumps(creds)) if creds else "")
        return self.send_json(200, text)


def commands():
    for line in sys.stdin:
        w = line.split()
        reply = "ok"
        if not w:
            continue
        with LOCK:
            if w[0] == "revoke":
                STATE["tokens"].clear()
            elif w[0] == "vend" and len(w) == 4:
                STATE["vend"] = tuple(w[1:4])
                STATE["vend_none"] = STATE["vend_expired"] = False
            elif w[0] == "vend-stale-once" and len(w) == 4:
                STATE["stale"] = tuple(w[1:4])
            elif w[0] == "vend-none":
                STATE["vend_none"] = True
            elif w[0] == "vend-expired":
                STATE["vend_expired"] = True
            elif w[0] == "vend-ttl" and len(w) == 2:
                STATE["vend_ttl_ms"] = int(w[1])
            elif w[0] == "stats":
                reply = f"stats tokens={STATE['issued']} loads={STATE['loads']} refused={STATE['refused']}"
            else:
                reply = "error unknown command " + w[0]
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
    os._exit(0)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--warehouse", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--prefix", default="")
    p.add_argument("--log")
    p.add_argument("--tokens-file")
    p.add_argument("--token")
    p.add_argument("--oauth")
    p.add_argument("--scope", default="catalog")
    p.add_argument("--token-ttl", type=int, default=0)
    p.add_argument("--sigv4")
    p.add_argument("--sigv4-token")
    p.add_argument("--sigv4-region", default="us-east-1")
    p.add_argument("--sigv4-service", default="glue")
    p.add_argument("--vend")
    p.add_argument("--vend-endpoint")
    p.add_argument("--vend-ttl-ms", type=int, default=0)
    p.add_argument("--vend-as", choices=["config", "storage-credentials"], default="config")
    p.add_argument("--vend-prefix", default="s3://data/")
    p.add_argument("--metadata-location-root")
    ARGS = p.parse_args()
    if ARGS.vend:
        STATE["vend"] = tuple(ARGS.vend.split(":", 2))
        STATE["vend_ttl_ms"] = ARGS.vend_ttl_ms or None
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"listening {server.server_address[1]}\n")
    sys.stdout.flush()
    threading.Thread(target=commands, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
