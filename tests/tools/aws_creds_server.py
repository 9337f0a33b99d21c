#!/usr/bin/env python3
"""A loopback stand-in for the AWS credential providers tidemark's
credential chain asks (src/objstore/awscreds.h), for tests:

  IMDSv2      PUT /latest/api/token (needs X-aws-ec2-metadata-token-ttl-seconds),
              GET /latest/meta-data/iam/security-credentials/[ROLE]
              (needs X-aws-ec2-metadata-token from the PUT)
  container   GET /container/creds (needs Authorization: --auth when given)
  STS         POST /sts  Action=AssumeRoleWithWebIdentity (WebIdentityToken
              must be --web-token; the reply is STS's XML)

Every request is appended to --log as "METHOD PATH" so a test can see which
link answered. Prints "port N" once listening on 127.0.0.1."""
import argparse
import datetime
import http.server
import json
import sys
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("--key", required=True)
ap.add_argument("--secret", required=True)
ap.add_argument("--token", default="session-token-from-chain")
ap.add_argument("--auth", default="")
ap.add_argument("--web-token", default="web-identity-token")
ap.add_argument("--role", default="tidemark-test-role")
ap.add_argument("--log", required=True)
args = ap.parse_args()
IMDS_TOKEN = "imds-session-token-1"


def expiration():
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def note(self):
        with open(args.log, "a") as f:
            f.write(f"{self.command} {self.path}\n")

    def reply(self, status, body, ctype="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def creds_json(self, code=True):
        d = {"AccessKeyId": args.key, "SecretAccessKey": args.secret, "Token": args.token,
             "Expiration": expiration()}
        if code:
            d["Code"] = "Success"
            d["Type"] = "AWS-HMAC"
        return json.dumps(d)

    def do_PUT(self):
        self.note()
        if self.path != "/latest/api/token":
            return self.reply(404, "{}")
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(400, "missing ttl")
        self.reply(200, IMDS_TOKEN, "text/plain")

    def do_GET(self):
        self.note()
        base = "/latest/meta-data/iam/security-credentials/"
        if self.path.startswith(base):
            if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                return self.reply(401, "", "text/plain")
            rest = self.path[len(base):]
            if rest == "":
                return self.reply(200, args.role + "\n", "text/plain")
            if rest == args.role:
                return self.reply(200, self.creds_json())
            return self.reply(404, "", "text/plain")
        if self.path == "/container/creds":
            if args.auth and self.headers.get("Authorization") != args.auth:
                return self.reply(403, '{"message":"bad token"}')
            return self.reply(200, self.creds_json(code=False))
        self.reply(404, "{}")

    def do_POST(self):
        self.note()
        n = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(n).decode())
        if self.path != "/sts" or form.get("Action") != ["AssumeRoleWithWebIdentity"]:
            return self.reply(400, "<ErrorResponse><Error><Message>bad action</Message></Error></ErrorResponse>", "text/xml")
        if form.get("WebIdentityToken") != [args.web_token] or not form.get("RoleArn"):
            return self.reply(403, "<ErrorResponse><Error><Code>InvalidIdentityToken</Code>"
                              "<Message>the web identity token is not valid</Message></Error></ErrorResponse>", "text/xml")
        xml = ("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
               f"<AccessKeyId>{args.key}</AccessKeyId><SecretAccessKey>{args.secret}</SecretAccessKey>"
               f"<SessionToken>{args.token}</SessionToken><Expiration>{expiration()}</Expiration>"
               "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>")
        self.reply(200, xml, "text/xml")


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"port {srv.server_address[1]}", flush=True)
srv.serve_forever()
