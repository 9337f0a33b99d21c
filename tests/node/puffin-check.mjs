// puffin-check.mjs - an independent decoder of Puffin files holding Iceberg
// deletion vectors, written from format/puffin-spec.md and the
// RoaringFormatSpec, to check tidemark's writer: the leading and trailing
// PFA1 magic, the footer (payload size, flags, JSON), each blob inside the
// blob area, and for deletion-vector-v1 blobs the big-endian length, the
// D1 D3 39 64 magic, the big-endian CRC-32 and the portable 64-bit Roaring
// bitmap (array, bitset and run containers), whose cardinality must equal the
// blob's "cardinality" property. Prints one JSON line per blob; exits 1 on
// any violation. Usage: node puffin-check.mjs FILE.puffin
import fs from 'node:fs';
import zlib from 'node:zlib';

const die = (msg) => { console.error(`puffin-check: ${msg}`); process.exit(1); };
const file = process.argv[2] || die('usage: puffin-check.mjs FILE');
const buf = fs.readFileSync(file);
const MAGIC = Buffer.from('PFA1');
if (buf.length < 20) die('too short');
if (!buf.subarray(0, 4).equals(MAGIC)) die('no leading magic');
if (!buf.subarray(buf.length - 4).equals(MAGIC)) die('no trailing magic');
const flags = buf.subarray(buf.length - 8, buf.length - 4);
if (flags.some((b) => b !== 0)) die(`flags ${flags.toString('hex')} (uncompressed footer expected)`);
const psize = buf.readInt32LE(buf.length - 12);
const footerAt = buf.length - 12 - psize - 4;
if (psize < 0 || footerAt < 4) die('bad footer size');
if (!buf.subarray(footerAt, footerAt + 4).equals(MAGIC)) die('no footer magic');
const footer = JSON.parse(buf.subarray(footerAt + 4, footerAt + 4 + psize).toString('utf8'));
if (!Array.isArray(footer.blobs)) die('no blobs list');

function bitmap32(b, at, key, out) {
  const cookie = b.readUInt32LE(at);
  let n, runFlags = null;
  at += 4;
  if (cookie === 12346) { n = b.readUInt32LE(at); at += 4; }
  else if ((cookie & 0xffff) === 12347) {
    n = (cookie >>> 16) + 1;
    runFlags = b.subarray(at, at + ((n + 7) >> 3));
    at += (n + 7) >> 3;
  } else die(`bad cookie ${cookie}`);
  const desc = [];
  for (let i = 0; i < n; i++) desc.push([b.readUInt16LE(at + 4 * i), b.readUInt16LE(at + 4 * i + 2) + 1]);
  at += 4 * n;
  if (!runFlags || n >= 4) at += 4 * n; // offset header
  const hi = key * 2 ** 32;
  desc.forEach(([ck, card], i) => {
    const base = hi + ck * 65536;
    const before = out.length;
    if (runFlags && (runFlags[i >> 3] >> (i & 7)) & 1) {
      const runs = b.readUInt16LE(at); at += 2;
      for (let r = 0; r < runs; r++) {
        const s = b.readUInt16LE(at), l = b.readUInt16LE(at + 2); at += 4;
        for (let x = s; x <= s + l; x++) out.push(base + x);
      }
    } else if (card <= 4096) {
      for (let k = 0; k < card; k++) out.push(base + b.readUInt16LE(at + 2 * k));
      at += 2 * card;
    } else {
      for (let x = 0; x < 65536; x++) if ((b[at + (x >> 3)] >> (x & 7)) & 1) out.push(base + x);
      at += 8192;
    }
    if (out.length - before !== card) die(`container ${ck}: ${out.length - before} values, declares ${card}`);
  });
  return at;
}

for (const m of footer.blobs) {
  for (const k of ['type', 'fields', 'snapshot-id', 'sequence-number', 'offset', 'length']) {
    if (!(k in m)) die(`blob without ${k}`);
  }
  if (m.offset < 4 || m.offset + m.length > footerAt) die(`blob ${m.offset}+${m.length} outside the blob area`);
  const blob = buf.subarray(m.offset, m.offset + m.length);
  const line = { type: m.type, offset: m.offset, length: m.length, properties: m.properties };
  if (m.type === 'deletion-vector-v1') {
    if (m['compression-codec']) die('a DV blob must not be compressed');
    if (m['snapshot-id'] !== -1 || m['sequence-number'] !== -1) die('DV snapshot-id/sequence-number must be -1');
    const len = blob.readUInt32BE(0);
    if (len + 8 !== blob.length) die(`length field ${len} for a ${blob.length}-byte blob`);
    if (!blob.subarray(4, 8).equals(Buffer.from([0xd1, 0xd3, 0x39, 0x64]))) die('no DV magic');
    const crc = blob.readUInt32BE(4 + len);
    if (crc !== zlib.crc32(blob.subarray(4, 4 + len))) die('CRC-32 mismatch');
    const vec = blob.subarray(8, 4 + len);
    const nb = Number(vec.readBigUInt64LE(0));
    let at = 8;
    const positions = [];
    for (let i = 0; i < nb; i++) {
      const key = vec.readUInt32LE(at);
      at = bitmap32(vec, at + 4, key, positions);
    }
    if (at !== vec.length) die(`${vec.length - at} bytes after the last bitmap`);
    const props = m.properties || {};
    if (!props['referenced-data-file']) die('DV without referenced-data-file');
    if (String(positions.length) !== props.cardinality) die(`cardinality ${props.cardinality}, holds ${positions.length}`);
    line.positions = positions;
  }
  console.log(JSON.stringify(line));
}
