// Checks tidemark's rows of an Iceberg table whose nested columns evolved
// (tests/integration/test_iceberg_nested_evolve.sh, issue 16) against
// icebird's. icebird maps top-level columns by field id but returns a nested
// value in the shape its data file was written in, so the rows of files
// written before the schema change (id < 1000) are moved to the new shape
// here, by the change the test made (written out below, independently of
// tidemark's reader): p {a, b, c} -> {c, alpha = a, d = null};
// l [{x, y}] -> [{x, z = null}]; m {k: {v}} -> {k: {vv = v, w = null}}.
// Values compare as canonical JSON: object keys sorted, integers written as
// strings by one side compared as numbers.
// Usage: node nested-evolve-check.mjs TIDEMARK_JSON ICEBIRD_JSONL [same]
//   same: both files hold rows of the current shape (no move).
// Exit 0 when the row multisets are equal; else 1 with both on stderr.
import fs from 'node:fs';

const [oursFile, otherFile, mode] = process.argv.slice(2);
const canon = (v) => {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map(canon);
  if (typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  }
  if (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v)) return Number(v);
  return v;
};
const moveOld = (r) => {
  if (mode === 'same' || Number(r.id) >= 1000) return r;
  const p = r.p == null ? null : { c: r.p.c, alpha: r.p.a, d: null };
  const l = r.l == null ? null : r.l.map((e) => (e == null ? null : { x: e.x, z: null }));
  const m = r.m == null ? null
    : Object.fromEntries(Object.entries(r.m).map(([k, v]) => [k, v == null ? null : { vv: v.v, w: null }]));
  return { id: r.id, p, l, m };
};
const read = (f) => {
  const text = fs.readFileSync(f, 'utf8').trim();
  return text.startsWith('[') ? JSON.parse(text) : text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
};
const ours = read(oursFile).map((r) => JSON.stringify(canon(r))).sort();
const other = read(otherFile).map((r) => JSON.stringify(canon(moveOld(r)))).sort();
const same = ours.length === other.length && ours.every((r, i) => r === other[i]);
if (!same) {
  console.error(`rows differ: tidemark ${ours.length}, other ${other.length}`);
  for (let i = 0; i < Math.max(ours.length, other.length); i++) {
    if (ours[i] !== other[i]) console.error(`  tidemark: ${ours[i]}\n  other:    ${other[i]}`);
  }
  process.exit(1);
}
console.log(`${ours.length} rows equal`);
