#!/usr/bin/python3
"""A protocol-true AWS Glue Data Catalog for tests (there is no Glue emulator).

It speaks what Glue speaks: AWS JSON 1.1 (`POST /`, Content-Type
application/x-amz-json-1.1, X-Amz-Target AWSGlue.<Operation>), answers
GetTable, GetTables, GetDatabase and GetDatabases (NextToken pagination,
MaxResults), and errors as Glue words them ({"__type", "Message"} with
HTTP 400, the type also in x-amzn-ErrorType).

Every request must carry a SigV4 signature for service "glue" that verifies:
the signature is recomputed by botocore (Debian's python3-botocore, AWS's
own signer, not tidemark's code) over the headers the request says it signed,
at the request's own X-Amz-Date, and compared. A wrong key is
UnrecognizedClientException, a bad signature InvalidSignatureException, a
missing one MissingAuthenticationTokenException, a clock off by more than 15
minutes InvalidSignatureException (as Glue).

The catalog is a JSON file, read again on every request (tests edit it with
an atomic rename to commit):
  {"databases": {"DB": {"TABLE": {<a Glue Table object>}, ...}, ...}}
Name and DatabaseName are filled in from the keys.

  glue_server.py --catalog FILE [--port N] [--region R] [--key K --secret S]
                 [--token T] [--page-size N] [--log FILE]
prints "listening PORT" once it accepts connections; --log appends one line
per request: "OPERATION ok" or "OPERATION ERRORTYPE".
"""
import argparse
import datetime
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ARGS = None
LOG_LOCK = threading.Lock()


class GlueError(Exception):
    def __init__(self, kind, message, status=400):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


def load_catalog():
    with open(ARGS.catalog) as f:
        return json.load(f).get("databases", {})


def parse_auth(value):
    """'AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/glue/aws4_request, SignedHeaders=a;b, Signature=hex'"""
    if not value or not value.startswith("AWS4-HMAC-SHA256 "):
        raise GlueError("MissingAuthenticationTokenException", "Missing Authentication Token")
    fields = {}
    for part in value[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = part.strip().partition("=")
        fields[k] = v
    try:
        key, date, region, service, term = fields["Credential"].split("/")
        return key, date, region, service, term, fields["SignedHeaders"].split(";"), fields["Signature"]
    except (KeyError, ValueError):
        raise GlueError("IncompleteSignatureException", "Authorization header requires Credential, SignedHeaders and Signature")


def verify(handler, body):
    key, date, region, service, term, signed, signature = parse_auth(handler.headers.get("Authorization"))
    if key != ARGS.key:
        raise GlueError("UnrecognizedClientException", "The security token included in the request is invalid.")
    if service != "glue" or term != "aws4_request" or region != ARGS.region:
        raise GlueError("InvalidSignatureException", "Credential should be scoped to a valid region and service 'glue'.")
    amz_date = handler.headers.get("X-Amz-Date")
    if not amz_date or not amz_date.startswith(date):
        raise GlueError("InvalidSignatureException", "X-Amz-Date is missing or outside the credential's date.")
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    if abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) > 900:
        raise GlueError("InvalidSignatureException", "Signature expired: the request time is more than 15 minutes off.")
    for required in ("host", "x-amz-date", "x-amz-target", "content-type"):
        if required not in signed:
            raise GlueError("InvalidSignatureException", f"'{required}' must be a signed header.")
    token = handler.headers.get("X-Amz-Security-Token")
    if ARGS.token and token != ARGS.token:
        raise GlueError("UnrecognizedClientException", "The security token included in the request is invalid.")
    headers = {}
    for name in signed:
        v = handler.headers.get(name)
        if v is None:
            raise GlueError("InvalidSignatureException", f"Signed header '{name}' is missing.")
        headers[name] = v
    req = AWSRequest(method=handler.command, url="http://" + headers["host"] + handler.path, data=body, headers=headers)
    req.context["timestamp"] = amz_date
    auth = SigV4Auth(Credentials(ARGS.key, ARGS.secret, token), "glue", region)
    canonical = auth.canonical_request(req)
    expected = auth.signature(auth.string_to_sign(req, canonical), req)
    if expected != signature:
        raise GlueError("InvalidSignatureException",
                        "The request signature we calculated does not match the signature you provided. "
                        "Check your AWS Secret Access Key and signing method.")


def page(items, req):
    size = ARGS.page_size
    if "MaxResults" in req:
        size = max(1, min(size, int(req["MaxResults"])))
    start = 0
    if req.get("NextToken"):
        try:
            start = int(req["NextToken"].split("-", 1)[1])
        except (IndexError, ValueError):
            raise GlueError("InvalidInputException", "Invalid NextToken")
    out = {"items": items[start:start + size]}
    if start + size < len(items):
        out["NextToken"] = f"tok-{start + size}"
    return out


def table_object(db, name, t):
    t = dict(t)
    t["Name"] = name
    t["DatabaseName"] = db
    t.setdefault("CatalogId", "123456789012")
    t.setdefault("CreateTime", 1733000000.0)
    return t


def database(cat, name):
    if name not in cat:
        raise GlueError("EntityNotFoundException", f"Database {name} not found.")
    return cat[name]


def op_get_table(req, cat):
    db = database(cat, req.get("DatabaseName", ""))
    name = req.get("Name", "")
    if name not in db:
        raise GlueError("EntityNotFoundException", f"Table {name} not found.")
    return {"Table": table_object(req["DatabaseName"], name, db[name])}


def op_get_tables(req, cat):
    db = database(cat, req.get("DatabaseName", ""))
    tables = [table_object(req["DatabaseName"], n, db[n]) for n in sorted(db)]
    p = page(tables, req)
    out = {"TableList": p["items"]}
    if "NextToken" in p:
        out["NextToken"] = p["NextToken"]
    return out


def op_get_database(req, cat):
    database(cat, req.get("Name", ""))
    return {"Database": {"Name": req["Name"], "CatalogId": "123456789012"}}


def op_get_databases(req, cat):
    p = page([{"Name": n, "CatalogId": "123456789012"} for n in sorted(cat)], req)
    out = {"DatabaseList": p["items"]}
    if "NextToken" in p:
        out["NextToken"] = p["NextToken"]
    return out


OPS = {"GetTable": op_get_table, "GetTables": op_get_tables, "GetDatabase": op_get_database,
       "GetDatabases": op_get_databases}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj, error_type=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        if error_type:
            self.send_header("x-amzn-ErrorType", error_type)
        self.end_headers()
        self.wfile.write(data)

    def note(self, op, outcome):
        if ARGS.log:
            with LOG_LOCK, open(ARGS.log, "a") as f:
                f.write(f"{op} {outcome}\n")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        target = self.headers.get("X-Amz-Target", "")
        op = target[len("AWSGlue."):] if target.startswith("AWSGlue.") else target
        try:
            if self.path != "/":
                raise GlueError("UnknownOperationException", f"No operation at {self.path}", 404)
            if not self.headers.get("Content-Type", "").startswith("application/x-amz-json-1.1"):
                raise GlueError("SerializationException", "Content-Type must be application/x-amz-json-1.1")
            verify(self, body)
            if op not in OPS:
                raise GlueError("UnknownOperationException", f"Unknown operation {target}")
            try:
                req = json.loads(body or b"{}")
            except ValueError:
                raise GlueError("SerializationException", "The body is not JSON")
            result = OPS[op](req, load_catalog())
        except GlueError as e:
            self.note(op, e.kind)
            self.reply(e.status, {"__type": e.kind, "Message": e.message}, e.kind)
            return
        self.note(op, "ok")
        self.reply(200, result)

    def do_GET(self):
        self.reply(404, {"__type": "UnknownOperationException", "Message": "Glue takes POST /"},
                   "UnknownOperationException")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--catalog", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--key", default="AKIDGLUETEST")
    p.add_argument("--secret", default="gluesecret")
    p.add_argument("--token", default=None)
    p.add_argument("--page-size", type=int, default=100)
    p.add_argument("--log", default=None)
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
