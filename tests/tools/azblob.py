#!/usr/bin/env python3
"""A tiny Azure Blob Storage client for tests, against Azurite on loopback.

It signs with Shared Key itself (Python's hmac and hashlib, written from
Microsoft's "Authorize with Shared Key" page), so it is an implementation
independent of tidemark's src/objstore/azure/sharedkey.c, and it makes
account SAS tokens ("Create an account SAS"). No Azure SDK: Debian has none.

  azblob.py [--endpoint URL] [--account A] [--key K] mkcontainer C [C]...
  azblob.py ... put C BLOB FILE [BLOB FILE]...   one signed Put Blob each
  azblob.py ... delete C BLOB
  azblob.py ... list C [PREFIX]            names, one a line
  azblob.py ... sas [PERMISSIONS]          an account SAS token (default rwdlac)
  azblob.py sign-vector                    prints the string to sign and the
                                           signature of a fixed request (unit tests)
Defaults: Azurite's devstoreaccount1 and its well-known key; the endpoint is
the account URL (http://127.0.0.1:PORT/devstoreaccount1).
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import sys
import urllib.parse
import xml.etree.ElementTree as ET

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
VERSION = "2021-08-06"


def string_to_sign(method, account, path, query, headers):
    """path: the encoded URL path; query: {name: value} decoded; headers: {name: value}."""
    h = {k.lower(): v for k, v in headers.items()}
    length = h.get("content-length", "")
    if length == "0":
        length = ""
    fields = [method, h.get("content-encoding", ""), h.get("content-language", ""), length,
              h.get("content-md5", ""), h.get("content-type", ""), h.get("date", ""),
              h.get("if-modified-since", ""), h.get("if-match", ""), h.get("if-none-match", ""),
              h.get("if-unmodified-since", ""), h.get("range", "")]
    canon_headers = "".join("%s:%s\n" % (k, " ".join(h[k].split()))
                            for k in sorted(h) if k.startswith("x-ms-"))
    resource = "/" + account + path
    for name in sorted(k.lower() for k in query):
        values = sorted(v for k, v in query.items() if k.lower() == name)
        resource += "\n%s:%s" % (name, ",".join(values))
    return "\n".join(fields) + "\n" + canon_headers + resource


def sign(key, sts):
    mac = hmac.new(base64.b64decode(key), sts.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def http_date(t=None):
    t = t or datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%a, %d %b %Y %H:%M:%S GMT")


class Client:
    def __init__(self, endpoint, account, key):
        u = urllib.parse.urlsplit(endpoint)
        self.host, self.base, self.account, self.key = u.netloc, u.path.rstrip("/"), account, key

    def request(self, method, container, blob=None, query=None, body=b"", headers=None):
        query = query or {}
        path = self.base + "/" + container + ("/" + urllib.parse.quote(blob, safe="/~") if blob else "")
        h = {"x-ms-date": http_date(), "x-ms-version": VERSION, "Content-Length": str(len(body))}
        h.update(headers or {})
        sig = sign(self.key, string_to_sign(method, self.account, path, query, h))
        h["Authorization"] = "SharedKey %s:%s" % (self.account, sig)
        url = path + ("?" + urllib.parse.urlencode(query) if query else "")
        conn = http.client.HTTPConnection(self.host, timeout=30)
        conn.request(method, url, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        if r.status >= 300:
            sys.exit("azblob: %s %s: %d %s" % (method, url, r.status, data[:300]))
        return data


def account_sas(account, key, permissions="rwdlac"):
    expiry = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2))
    se = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
    # Account SAS, version 2020-12-06 and later: the encryption scope line is included.
    sts = "\n".join([account, permissions, "b", "sco", "", se, "", "http,https", VERSION, ""]) + "\n"
    q = {"sv": VERSION, "ss": "b", "srt": "sco", "sp": permissions, "se": se,
         "spr": "http,https", "sig": sign(key, sts)}
    return urllib.parse.urlencode(q)


def main(argv):
    endpoint, account, key = None, ACCOUNT, KEY
    while argv and argv[0].startswith("--"):
        opt, val, argv = argv[0], argv[1], argv[2:]
        if opt == "--endpoint": endpoint = val
        elif opt == "--account": account = val
        elif opt == "--key": key = val
        else: sys.exit("azblob: unknown option " + opt)
    cmd, args = argv[0], argv[1:]
    if cmd == "sign-vector":
        # A fixed Put Blob request of the unit test (tests/unit/objstore/test_azure.c).
        h = {"x-ms-date": "Sun, 11 Oct 2009 21:49:13 GMT", "x-ms-version": "2021-08-06",
             "x-ms-blob-type": "BlockBlob", "Content-Length": "11", "If-None-Match": "*"}
        sts = string_to_sign("PUT", "myaccount", "/mycontainer/dir/a%20b.parquet", {}, h)
        print(repr(sts)); print(sign(KEY, sts))
        h = {"x-ms-date": "Sun, 11 Oct 2009 21:49:13 GMT", "x-ms-version": "2021-08-06"}
        sts = string_to_sign("GET", "myaccount", "/mycontainer",
                             {"restype": "container", "comp": "list", "prefix": "a b/",
                              "marker": "2!80!x", "maxresults": "2"}, h)
        print(repr(sts)); print(sign(KEY, sts))
        return
    if cmd == "sas":
        print(account_sas(account, key, *(args[:1])))
        return
    c = Client(endpoint, account, key)
    if cmd == "mkcontainer":
        for container in args:
            c.request("PUT", container, query={"restype": "container"})
    elif cmd == "put":
        if len(args) < 3 or len(args) % 2 != 1:
            sys.exit("azblob: put C BLOB FILE [BLOB FILE]...")
        for blob, path in zip(args[1::2], args[2::2]):
            with open(path, "rb") as f:
                c.request("PUT", args[0], blob, body=f.read(), headers={"x-ms-blob-type": "BlockBlob"})
    elif cmd == "delete":
        c.request("DELETE", args[0], args[1])
    elif cmd == "list":
        q = {"restype": "container", "comp": "list"}
        if len(args) > 1: q["prefix"] = args[1]
        doc = ET.fromstring(c.request("GET", args[0], query=q))
        for n in doc.iter("Name"):
            print(n.text)
    else:
        sys.exit("azblob: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
