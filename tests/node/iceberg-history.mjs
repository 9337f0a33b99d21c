// Lists the metadata versions of a test table at which its current snapshot
// changes, oldest first, as CSV lines: metadata file, operation,
// live rows of that snapshot from ../shared/testdata/iceberg/EXPECTED.json.
// Usage: node iceberg-history.mjs TESTDATA_ICEBERG_DIR TABLE
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const [dir, table] = process.argv.slice(2);
const expected = JSON.parse(fs.readFileSync(path.join(dir, 'EXPECTED.json'), 'utf8'))[table];
const root = path.join(dir, table);
const read = (f) => {
  let b = fs.readFileSync(path.join(root, f));
  if (b[0] === 0x1f && b[1] === 0x8b) b = zlib.gunzipSync(b);
  return JSON.parse(b.toString('utf8'));
};
const head = read(expected.head_metadata);
// Rows per snapshot id: EXPECTED lists them in snapshot-log order (live, first occurrence).
const live = new Set(head.snapshots.map((s) => BigInt(s['snapshot-id']).toString()));
const order = [];
for (const e of (head['snapshot-log'] && head['snapshot-log'].length ? head['snapshot-log'] : head.snapshots)) {
  const id = BigInt(e['snapshot-id']).toString();
  if (live.has(id) && !order.includes(id)) order.push(id);
}
const rows = new Map();
order.forEach((id, i) => { if (i < expected.rows_per_snapshot.length) rows.set(id, expected.rows_per_snapshot[i].rows); });
const files = (head['metadata-log'] || []).map((m) => 'metadata/' + path.basename(m['metadata-file']));
files.push(expected.head_metadata);
let last = null;
for (const f of files) {
  let m;
  try { m = read(f); } catch { continue; }
  const cur = m['current-snapshot-id'];
  if (cur === undefined || cur === null || cur === -1) continue;
  const id = BigInt(cur).toString();
  if (id === last) continue;
  last = id;
  const snap = head.snapshots.find((s) => BigInt(s['snapshot-id']).toString() === id);
  console.log([f, snap ? snap.summary.operation : '?', rows.has(id) ? rows.get(id) : '?'].join(','));
}
