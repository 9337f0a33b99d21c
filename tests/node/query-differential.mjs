// Differential queries (issue 15): each query of a suite runs on DuckDB over
// the source files (views over read_parquet, an engine tidemark did not
// configure or feed) and on a running tidemark over HTTP (POST /v1/sql),
// once per target (a mapping of the suite's {placeholders} to dataset names:
// one per engine). Every column is cast to VARCHAR on both sides
// (SELECT COLUMNS(*)::VARCHAR), so the comparison is of values as DuckDB
// writes them, in order: every query of the suite orders its rows totally.
// Usage: node query-differential.mjs SUITE.json BASE_URL
// SUITE.json: {"views": {"ev": "read_parquet('/dir/*.parquet')", ...},
//              "targets": [{"ev": "ev_cay", ...}, ...],
//              "queries": ["SELECT ... FROM {ev} ...", ...]}
// Exit 0 when every answer is equal; else 1, naming each difference.
import fs from 'node:fs';
import { DuckDBInstance } from 'duckdb-lts'; // the DuckDB release tidemark links (deps/duckdb)

const [suitePath, base] = process.argv.slice(2);
if (!suitePath || !base) {
  console.error('usage: query-differential.mjs SUITE.json BASE_URL');
  process.exit(2);
}
const suite = JSON.parse(fs.readFileSync(suitePath, 'utf8'));
const fill = (q, map) => q.replace(/\{(\w+)\}/g, (_, k) => {
  if (!(k in map)) throw new Error(`no ${k} in ${JSON.stringify(map)}`);
  return map[k];
});
const wrap = (q) => `SELECT COLUMNS(*)::VARCHAR FROM (${q}) AS q`;

const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await db.connect();
for (const [name, rel] of Object.entries(suite.views)) await con.run(`CREATE VIEW ${name} AS SELECT * FROM ${rel}`);
const self = Object.fromEntries(Object.keys(suite.views).map((k) => [k, k]));

let compared = 0, failed = 0, rows = 0;
for (const q of suite.queries) {
  const want = (await con.runAndReadAll(wrap(fill(q, self)))).getRows().map((r) => r.map((v) => (v === null ? null : String(v))));
  if (want.length === 0) {
    console.error(`a query of the suite returns no rows (it would compare nothing): ${q}`);
    failed++;
    continue;
  }
  for (const target of suite.targets) {
    const sql = wrap(fill(q, target));
    const res = await fetch(`${base}/v1/sql`, { method: 'POST', body: sql, headers: { Accept: 'application/json' } });
    const text = await res.text();
    compared++;
    if (res.status !== 200) {
      console.error(`[${JSON.stringify(target)}] ${q}\n  HTTP ${res.status}: ${text.slice(0, 300)}`);
      failed++;
      continue;
    }
    const got = JSON.parse(text).map((o) => Object.values(o));
    const same = got.length === want.length && got.every((r, i) => JSON.stringify(r) === JSON.stringify(want[i]));
    if (!same) {
      failed++;
      let i = 0;
      while (i < Math.min(got.length, want.length) && JSON.stringify(got[i]) === JSON.stringify(want[i])) i++;
      console.error(`[${JSON.stringify(target)}] ${q}\n  ${got.length} rows, DuckDB ${want.length}; first difference at row ${i}:` +
        `\n  tidemark ${JSON.stringify(got[i])}\n  DuckDB   ${JSON.stringify(want[i])}`);
    } else {
      rows += got.length;
    }
  }
}
console.log(`${suite.queries.length} queries x ${suite.targets.length} targets: ${compared - failed} of ${compared} equal (${rows} rows)`);
process.exit(failed ? 1 : 0);
