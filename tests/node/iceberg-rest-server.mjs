// A small Iceberg REST catalog over a file-system warehouse, for tests. It
// follows the REST spec for the routes tidemark uses:
//   GET /v1/config                                  -> {defaults, overrides: {prefix}}
//   GET /v1/{prefix}/namespaces/{ns}/tables/{table} -> {metadata-location, metadata, config}
// and answers errors with the spec's error model {"error": {message, type, code}}.
// A table named "fail500" answers 500 (to test server errors); with --token,
// requests without "Authorization: Bearer TOKEN" get 401.
//
// Usage: node iceberg-rest-server.mjs --warehouse DIR [--prefix P] [--token T] [--port N]
//                                     [--lifeline 1]
// With --lifeline 1 the server exits when its stdin closes, so a test that dies
// never leaves it running. The table NS.T lives in DIR/NS/T (multi-level namespaces: DIR/A/B/T). The server
// prints "listening PORT" on stdout once it accepts connections, on 127.0.0.1 only.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = { warehouse: null, prefix: '', token: null, port: 0, lifeline: null };
for (let i = 0; i < args.length; i++) {
  const k = args[i].replace(/^--/, '');
  opt[k] = args[++i];
}
if (!opt.warehouse) {
  console.error('usage: iceberg-rest-server.mjs --warehouse DIR [--prefix P] [--token T] [--port N]');
  process.exit(2);
}

function send(res, code, body) {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function error(res, code, type, message) {
  send(res, code, { error: { message, type, code } });
}

// The current metadata file of a table folder: version-hint.text, else the highest vN.
function currentMetadata(dir) {
  const mdir = path.join(dir, 'metadata');
  if (!fs.existsSync(mdir)) return null;
  const hint = path.join(mdir, 'version-hint.text');
  if (fs.existsSync(hint)) {
    const v = fs.readFileSync(hint, 'utf8').trim();
    const f = path.join(mdir, `v${v}.metadata.json`);
    if (/^\d+$/.test(v) && fs.existsSync(f)) return f;
  }
  let best = null, bestN = -1;
  for (const name of fs.readdirSync(mdir)) {
    const m = /^v(\d+)\.metadata\.json$/.exec(name);
    if (m && Number(m[1]) > bestN) { bestN = Number(m[1]); best = path.join(mdir, name); }
  }
  return best;
}

const server = http.createServer((req, res) => {
  if (req.method !== 'GET') return error(res, 405, 'MethodNotAllowed', `${req.method} is not served`);
  if (opt.token && req.headers.authorization !== `Bearer ${opt.token}`) {
    return error(res, 401, 'NotAuthorizedException', 'Not authorized: missing or wrong bearer token');
  }
  const url = new URL(req.url, 'http://127.0.0.1');
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts.length === 2 && parts[0] === 'v1' && parts[1] === 'config') {
    const overrides = opt.prefix ? { prefix: opt.prefix } : {};
    return send(res, 200, {
      defaults: {},
      overrides,
      endpoints: ['GET /v1/{prefix}/namespaces/{namespace}/tables/{table}'],
    });
  }
  // /v1/[prefix/]namespaces/{ns}/tables/{table}
  let p = parts.slice(1);
  if (parts[0] !== 'v1') return error(res, 404, 'NoSuchRouteException', `no route ${url.pathname}`);
  if (opt.prefix) {
    if (decodeURIComponent(p[0] || '') !== opt.prefix) {
      return error(res, 404, 'NoSuchRouteException', `unknown prefix in ${url.pathname}`);
    }
    p = p.slice(1);
  }
  if (p.length !== 4 || p[0] !== 'namespaces' || p[2] !== 'tables') {
    return error(res, 404, 'NoSuchRouteException', `no route ${url.pathname}`);
  }
  const levels = decodeURIComponent(p[1]).split('\x1f');
  const table = decodeURIComponent(p[3]);
  const name = [...levels, table].join('.');
  if (table === 'fail500') {
    return error(res, 500, 'ServerError', `internal failure injected for ${name}`);
  }
  if (levels.some((l) => l === '..' || l.includes('/')) || table.includes('/') || table === '..') {
    return error(res, 400, 'BadRequestException', 'invalid namespace or table name');
  }
  const nsDir = path.join(opt.warehouse, ...levels);
  if (!fs.existsSync(nsDir)) {
    return error(res, 404, 'NoSuchNamespaceException', `Namespace does not exist: ${levels.join('.')}`);
  }
  const file = currentMetadata(path.join(nsDir, table));
  if (!file) return error(res, 404, 'NoSuchTableException', `Table does not exist: ${name}`);
  // The metadata goes out as written: JSON.parse would round 64-bit snapshot ids.
  const metadata = fs.readFileSync(file, 'utf8');
  const text = `{"metadata-location": ${JSON.stringify(file)}, "metadata": ${metadata}, ` +
    `"config": {"client.region": "local"}}`;
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  return res.end(text);
});

server.listen(Number(opt.port), '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
if (opt.lifeline) {
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
}
