// gen-puffin-fuzz-seeds.mjs - writes the seed corpus of fuzz/fuzz_puffin.c:
// Puffin files and bare deletion-vector-v1 blobs, built here independently of
// tidemark's writer from the Puffin spec and the RoaringFormatSpec (array,
// bitset and run containers, several 32-bit keys, offset headers), plus a
// file with an LZ4-compressed footer and a zstd-compressed blob (through the
// lz4 and zstd command-line tools, content size recorded), a footer-only file
// and truncated copies.
//
// Usage: node tests/node/gen-puffin-fuzz-seeds.mjs fuzz/corpora/fuzz_puffin
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

const out = process.argv[2];
if (!out) throw new Error('usage: gen-puffin-fuzz-seeds.mjs DIR');
fs.mkdirSync(out, { recursive: true });

const le16 = (v) => { const b = Buffer.alloc(2); b.writeUInt16LE(v); return b; };
const le32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; };
const be32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32BE(v >>> 0); return b; };

// A 32-bit Roaring bitmap of sorted values (numbers < 2^32).
function bitmap32(values, preferRuns) {
  const groups = new Map();
  for (const v of values) {
    const k = Math.floor(v / 65536);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(v % 65536);
  }
  const cs = [...groups.entries()].map(([key, vals]) => {
    const runs = [];
    for (const x of vals) {
      const last = runs[runs.length - 1];
      if (last && last[0] + last[1] + 1 === x) last[1]++;
      else runs.push([x, 0]);
    }
    let type = vals.length <= 4096 ? 'array' : 'bitset';
    if (preferRuns && 2 + 4 * runs.length < (type === 'array' ? 2 * vals.length : 8192)) type = 'run';
    let body;
    if (type === 'array') body = Buffer.concat(vals.map(le16));
    else if (type === 'bitset') {
      body = Buffer.alloc(8192);
      for (const x of vals) body[x >> 3] |= 1 << (x & 7);
    } else body = Buffer.concat([le16(runs.length), ...runs.flatMap(([s, l]) => [le16(s), le16(l)])]);
    return { key, card: vals.length, type, body };
  });
  const anyRun = cs.some((c) => c.type === 'run');
  const parts = [];
  let header;
  if (anyRun) {
    parts.push(le32(12347 | ((cs.length - 1) << 16)));
    const flags = Buffer.alloc((cs.length + 7) >> 3);
    cs.forEach((c, i) => { if (c.type === 'run') flags[i >> 3] |= 1 << (i & 7); });
    parts.push(flags);
    header = 4 + flags.length + 4 * cs.length + (cs.length >= 4 ? 4 * cs.length : 0);
  } else {
    parts.push(le32(12346), le32(cs.length));
    header = 8 + 8 * cs.length;
  }
  for (const c of cs) parts.push(le16(c.key), le16(c.card - 1));
  if (!anyRun || cs.length >= 4) {
    let off = header;
    for (const c of cs) { parts.push(le32(off)); off += c.body.length; }
  }
  for (const c of cs) parts.push(c.body);
  return Buffer.concat(parts);
}

// A deletion-vector-v1 blob over positions (BigInt-free: keys < 2^21 here).
function dvBlob(positions, preferRuns = true) {
  const byKey = new Map();
  for (const p of positions) {
    const k = Math.floor(p / 2 ** 32);
    if (!byKey.has(k)) byKey.set(k, []);
    byKey.get(k).push(p % 2 ** 32);
  }
  const keys = [...byKey.keys()].sort((a, b) => a - b);
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(keys.length));
  const vec = Buffer.concat([n, ...keys.flatMap((k) => [le32(k), bitmap32(byKey.get(k), preferRuns)])]);
  const body = Buffer.concat([Buffer.from([0xd1, 0xd3, 0x39, 0x64]), vec]);
  return Buffer.concat([be32(body.length), body, be32(zlib.crc32(body))]);
}

function puffin(blobs, { lz4Footer = false } = {}) {
  const parts = [Buffer.from('PFA1')];
  let at = 4;
  const meta = blobs.map((b) => {
    const m = { type: b.type, fields: [2147483545], 'snapshot-id': -1, 'sequence-number': -1, offset: at, length: b.data.length };
    if (b.codec) m['compression-codec'] = b.codec;
    if (b.props) m.properties = b.props;
    parts.push(b.data);
    at += b.data.length;
    return m;
  });
  let payload = Buffer.from(JSON.stringify({ blobs: meta, properties: { 'created-by': 'gen-puffin-fuzz-seeds' } }));
  if (lz4Footer) payload = tool('lz4', ['-q', '-f', '--content-size'], payload);
  const flags = Buffer.alloc(4);
  if (lz4Footer) flags[0] = 1;
  parts.push(Buffer.from('PFA1'), payload, le32(payload.length), flags, Buffer.from('PFA1'));
  return Buffer.concat(parts);
}

function tool(cmd, args, input) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'puffin-seed-'));
  const src = path.join(dir, 'in'), dst = path.join(dir, 'out');
  fs.writeFileSync(src, input);
  execFileSync(cmd, cmd === 'zstd' ? [...args, src, '-o', dst] : [...args, src, dst]);
  const res = fs.readFileSync(dst);
  fs.rmSync(dir, { recursive: true });
  return res;
}

const range = (a, b, step = 1) => { const r = []; for (let i = a; i < b; i += step) r.push(i); return r; };
const dv = (pos, file, runs = true) => ({
  type: 'deletion-vector-v1', data: dvBlob(pos, runs),
  props: { 'referenced-data-file': file, cardinality: String(pos.length) },
});

const seeds = {
  'seed-dv-array': puffin([dv([0, 5, 7], 's3://b/t/data/a.parquet')]),
  'seed-dv-two-blobs': puffin([dv([1, 3], 'data/a.parquet'), dv([2, 4, 6, 8], 'data/b.parquet')]),
  'seed-dv-runs': puffin([dv([...range(10, 15), 65539, 2 ** 32 + 9], 'a.parquet')]),
  'seed-dv-bitset': puffin([dv(range(0, 15000, 3), 'a.parquet', false)]),
  'seed-dv-many-containers': puffin([dv(range(0, 65536 * 6, 65536 / 2).concat(range(65536 * 7, 65536 * 7 + 100)), 'a.parquet')]),
  'seed-footer-only': puffin([]),
  'seed-lz4-footer-zstd-blob': puffin([
    { type: 'deletion-vector-v1', data: tool('zstd', ['-q', '-f'], dvBlob([3, 4, 5])), codec: 'zstd' },
    { type: 'apache-datasketches-theta-v1', data: tool('lz4', ['-q', '-f', '--content-size'], Buffer.alloc(64, 7)), codec: 'lz4' },
  ], { lz4Footer: true }),
  'seed-bare-dv': dvBlob([...range(0, 40), 70000, 2 ** 33]),
  'seed-bare-dv-empty': dvBlob([]),
};
for (const [name, data] of Object.entries(seeds)) fs.writeFileSync(path.join(out, name), data);
// Truncated copies: the footer and a blob cut short.
const full = seeds['seed-dv-two-blobs'];
fs.writeFileSync(path.join(out, 'seed-cut-footer'), full.subarray(0, full.length - 7));
fs.writeFileSync(path.join(out, 'seed-cut-blob'), full.subarray(0, 20));
console.log(`wrote ${Object.keys(seeds).length + 2} seeds to ${out}`);
