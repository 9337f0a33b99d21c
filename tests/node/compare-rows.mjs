// Compares two row sets for tests: tidemark's `iceberg cat --format json`
// output (a JSON array) and JSON lines (icebird-read.mjs). Values are
// normalised so that the two writers' text forms compare: numbers (and
// 64-bit integers written as strings) by numeric value, ISO timestamps by
// instant, everything else as text. Rows are compared as sorted multisets.
// Usage: node compare-rows.mjs TIDEMARK_JSON_FILE JSONL_FILE
// Exit 0 when equal; else 1 with the differences on stderr.
import fs from 'node:fs';

const [a, b] = process.argv.slice(2);
const norm = (v) => {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return String(v);
  const s = String(v);
  if (/^-?\d+(\.\d+)?$/.test(s)) return String(Number(s));
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(s)) {
    const d = new Date(s);
    if (!isNaN(d)) return d.toISOString();
  }
  return s;
};
const rowText = (r) =>
  Object.keys(r).sort().map((k) => `${k}=${norm(r[k])}`).join('|');

const left = JSON.parse(fs.readFileSync(a, 'utf8')).map(rowText).sort();
const right = fs.readFileSync(b, 'utf8').split('\n').filter(Boolean).map((l) => rowText(JSON.parse(l))).sort();
const same = left.length === right.length && left.every((r, i) => r === right[i]);
if (!same) {
  console.error(`rows differ: tidemark ${left.length}, other ${right.length}`);
  console.error('tidemark:\n  ' + left.join('\n  '));
  console.error('other:\n  ' + right.join('\n  '));
  process.exit(1);
}
console.log(`${left.length} rows equal`);
