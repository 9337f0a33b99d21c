// s3rver-start.mjs - starts an S3-protocol server on 127.0.0.1 for tidemark's
// tests: npm s3rver (objects on disk in a temporary folder) behind a small
// front proxy that this script adds.
//
// s3rver 3.7 accepts any AWS Signature Version 4 whose access key it knows
// (it checks V2 signatures only). The proxy therefore verifies every V4
// signature itself, with node's crypto, from the AWS documentation — an
// implementation independent of tidemark's C signer — including the payload
// hash of uploads, and answers 403 SignatureDoesNotMatch / InvalidAccessKeyId
// like S3 does. It also injects faults on command, so that tests can see
// retries, resumed reads and timeouts over real HTTP.
//
// Usage (s3rver's continuation tokens use DES, which OpenSSL 3 only offers
// through its legacy provider; without it, listings past 1,000 keys fail):
//   node --openssl-legacy-provider s3rver-start.mjs --dir DIR [--buckets a,b]
//        [--key K --secret S [--session-token T]] [--no-verify] [--port N]
// With --session-token every request must carry (and sign) x-amz-security-token T,
// as S3 wants for temporary credentials.
// Prints "port N" on stdout once both servers listen, then reads commands,
// one per line, on stdin, answering each with one line on stdout:
//   fail STATUS COUNT      the next COUNT requests get STATUS with an S3 error body
//   stall COUNT            the next COUNT requests get no answer (the client times out)
//   reset COUNT            the next COUNT requests have their connection reset
//   cut COUNT BYTES        the next COUNT GET bodies stop after BYTES bytes (connection dropped)
//   ignore-range COUNT     the next COUNT requests lose their Range header (200, whole object)
//   keys K S [T]           from now on only key K with secret S (and session token T) is accepted
//   delay MS COUNT         the next COUNT requests are answered MS milliseconds late
//   stats                  "stats requests=N body_bytes=M signature_failures=F" (since start)
//   clear                  cancels pending faults
// Exits cleanly on SIGTERM, SIGINT or when stdin closes.
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import readline from 'node:readline';

const require = createRequire(import.meta.url);
const S3rver = require('s3rver');
const AWSAccount = require('s3rver/lib/models/account');

function parseArgs(argv) {
  const o = { buckets: [], verify: true, port: 0 };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--dir') o.dir = next();
    else if (a === '--buckets') o.buckets = next().split(',').filter(Boolean);
    else if (a === '--key') o.key = next();
    else if (a === '--secret') o.secret = next();
    else if (a === '--session-token') o.token = next();
    else if (a === '--no-verify') o.verify = false;
    else if (a === '--port') o.port = Number(next());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.dir) throw new Error('--dir is required');
  if (!!o.key !== !!o.secret) throw new Error('--key and --secret go together');
  return o;
}

const opts = parseArgs(process.argv);
try {
  const { createCipheriv } = await import('node:crypto');
  createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8));
} catch {
  console.error('s3rver-start.mjs: DES is unavailable; run node with --openssl-legacy-provider');
  process.exit(2);
}
const faults = { fail: [], stall: 0, reset: 0, cut: [], ignoreRange: 0, delay: [] };
const stats = { requests: 0, bodyBytes: 0, signatureFailures: 0 };
const stalled = new Set();

// ---- SigV4 verification (AWS docs: "Create a signed AWS API request") ----

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => createHmac('sha256', key).update(data).digest();

// RFC 3986 encoding as SigV4 wants it: unreserved characters stay.
function encode(s, keepSlash) {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

// Percent-decoding to raw bytes (a '+' stays a '+': S3 query strings use %20).
function decode(s) {
  const bytes = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(s[i], 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function canonicalRequest(req, signedHeaders, payloadHash) {
  const [rawPath, rawQuery = ''] = req.url.split(/\?(.*)/s);
  const path = encode(decode(rawPath), true);
  const pairs = rawQuery
    .split('&')
    .filter((p) => p.length)
    .map((p) => {
      const eq = p.indexOf('=');
      const name = eq < 0 ? p : p.slice(0, eq);
      const value = eq < 0 ? '' : p.slice(eq + 1);
      return [encode(decode(name), false), encode(decode(value), false)];
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const query = pairs.map(([n, v]) => `${n}=${v}`).join('&');
  const headers = signedHeaders
    .map((name) => {
      const v = req.headers[name];
      const value = (Array.isArray(v) ? v.join(',') : v ?? '').trim().replace(/\s+/g, ' ');
      return `${name}:${value}\n`;
    })
    .join('');
  return [req.method, path, query, headers, signedHeaders.join(';'), payloadHash].join('\n');
}

// Returns null when the request is signed correctly, else [code, message].
function verify(req, body) {
  const auth = req.headers.authorization;
  if (!auth) return ['AccessDenied', 'Anonymous access is not allowed'];
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
    auth,
  );
  if (!m) return ['AuthorizationHeaderMalformed', 'The authorization header is malformed'];
  const [, key, date8, region, signedList, signature] = m;
  if (key !== opts.key)
    return ['InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'];
  const amzDate = req.headers['x-amz-date'] ?? '';
  if (!amzDate.startsWith(date8)) return ['AccessDenied', 'x-amz-date does not match the credential date'];
  const t = Date.UTC(+amzDate.slice(0, 4), +amzDate.slice(4, 6) - 1, +amzDate.slice(6, 8),
    +amzDate.slice(9, 11), +amzDate.slice(11, 13), +amzDate.slice(13, 15));
  if (!(Math.abs(Date.now() - t) < 15 * 60 * 1000))
    return ['RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.'];
  const signedHeaders = signedList.split(';');
  if (!signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date'))
    return ['AccessDenied', 'host and x-amz-date must be signed'];
  if (opts.token && (req.headers['x-amz-security-token'] !== opts.token ||
                     !signedHeaders.includes('x-amz-security-token')))
    return ['InvalidToken', 'The provided token is malformed or otherwise invalid.'];
  const payloadHash = req.headers['x-amz-content-sha256'];
  if (!payloadHash) return ['InvalidRequest', 'Missing required header for this request: x-amz-content-sha256'];
  if (payloadHash !== 'UNSIGNED-PAYLOAD' && payloadHash !== sha256(body))
    return ['XAmzContentSHA256Mismatch', 'The provided x-amz-content-sha256 header does not match what was computed.'];
  const creq = canonicalRequest(req, signedHeaders, payloadHash);
  const scope = `${date8}/${region}/s3/aws4_request`;
  const sts = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(creq)].join('\n');
  let k = hmac('AWS4' + opts.secret, date8);
  k = hmac(k, region);
  k = hmac(k, 's3');
  k = hmac(k, 'aws4_request');
  const want = createHmac('sha256', k).update(sts).digest('hex');
  if (want !== signature)
    return ['SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'];
  return null;
}

function s3Error(res, status, code, message) {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>tm-proxy</RequestId></Error>`;
  res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const k_status_codes = { 500: 'InternalError', 503: 'SlowDown', 429: 'TooManyRequests', 400: 'RequestTimeout', 403: 'AccessDenied', 404: 'NoSuchKey' };

// ---- servers ----

const s3 = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: opts.dir,
  serviceEndpoint: 'localhost',
  configureBuckets: opts.buckets.map((name) => ({ name })),
});
if (opts.key) AWSAccount.DUMMY_ACCOUNT.createKeyPair(opts.key, opts.secret);
const inner = await s3.run();
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

const proxy = http.createServer((req, res) => {
  stats.requests++;
  if (faults.reset > 0) {
    faults.reset--;
    req.socket.destroy();
    return;
  }
  if (faults.stall > 0) {
    faults.stall--;
    stalled.add(req.socket);
    req.socket.on('close', () => stalled.delete(req.socket));
    return;
  }
  const chunks = [];
  const delayMs = faults.delay.length > 0 ? faults.delay.shift() : 0;
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => setTimeout(() => {
    const body = Buffer.concat(chunks);
    if (faults.fail.length > 0) {
      const status = faults.fail.shift();
      s3Error(res, status, k_status_codes[status] ?? 'InjectedError', 'injected by s3rver-start.mjs');
      return;
    }
    if (opts.key && opts.verify) {
      const bad = verify(req, body);
      if (bad) {
        stats.signatureFailures++;
        if (process.env.TM_S3_DEBUG) console.error(`signature check failed: ${req.method} ${req.url} host=${req.headers.host}: ${bad[0]}`);
        s3Error(res, 403, bad[0], bad[1]);
        return;
      }
    }
    const headers = { ...req.headers };
    if (faults.ignoreRange > 0 && headers.range) {
      faults.ignoreRange--;
      delete headers.range;
    }
    const cut = req.method === 'GET' && faults.cut.length > 0 ? faults.cut.shift() : -1;
    const fwd = http.request(
      { host: '127.0.0.1', port: inner.port, method: req.method, path: req.url, headers, agent },
      (up) => {
        res.writeHead(up.statusCode, up.headers);
        let sent = 0;
        up.on('data', (c) => {
          if (cut >= 0 && sent + c.length > cut) {
            const part = c.subarray(0, Math.max(0, cut - sent));
            stats.bodyBytes += part.length;
            res.write(part, () => res.socket?.destroy());
            up.destroy();
            return;
          }
          sent += c.length;
          stats.bodyBytes += c.length;
          res.write(c);
        });
        up.on('end', () => res.end());
        up.on('error', () => res.socket?.destroy());
      },
    );
    fwd.on('error', (e) => s3Error(res, 502, 'BadGateway', String(e.message)));
    fwd.end(body);
  }, delayMs));
});
proxy.keepAliveTimeout = 30000;
await new Promise((resolve, reject) => {
  proxy.once('error', reject);
  proxy.listen(opts.port, '127.0.0.1', resolve);
});
process.stdout.write(`port ${proxy.address().port}\n`);

let closing = false;
async function shutdown() {
  if (closing) return;
  closing = true;
  for (const s of stalled) s.destroy();
  proxy.closeAllConnections?.();
  await new Promise((r) => proxy.close(r));
  agent.destroy();
  await s3.close().catch(() => {});
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [cmd, a, b, c] = line.trim().split(/\s+/);
  const n = Number(a);
  if (cmd === 'fail') for (let i = 0; i < Number(b); i++) faults.fail.push(n);
  else if (cmd === 'stall') faults.stall += n;
  else if (cmd === 'reset') faults.reset += n;
  else if (cmd === 'cut') for (let i = 0; i < n; i++) faults.cut.push(Number(b));
  else if (cmd === 'ignore-range') faults.ignoreRange += n;
  else if (cmd === 'delay') for (let i = 0; i < Number(b); i++) faults.delay.push(n);
  else if (cmd === 'keys') {
    opts.key = a;
    opts.secret = b;
    opts.token = c;
    AWSAccount.DUMMY_ACCOUNT.createKeyPair(a, b);
  }
  else if (cmd === 'clear') Object.assign(faults, { fail: [], stall: 0, reset: 0, cut: [], ignoreRange: 0, delay: [] });
  else if (cmd === 'stats') {
    process.stdout.write(`stats requests=${stats.requests} body_bytes=${stats.bodyBytes} signature_failures=${stats.signatureFailures}\n`);
    return;
  } else if (cmd) {
    process.stdout.write(`error unknown command ${cmd}\n`);
    return;
  }
  process.stdout.write('ok\n');
});
rl.on('close', shutdown);
