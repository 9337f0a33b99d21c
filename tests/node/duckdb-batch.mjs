// Runs several SQL queries in one in-memory DuckDB (threads=1) and prints a
// JSON array: for each query, its rows as CSV without the header row (the
// form of duckdb-query.mjs), one string per query. One process for a test's
// expected answers instead of one per query.
// Usage: node duckdb-batch.mjs "SQL" ["SQL" ...]
import { DuckDBInstance } from '@duckdb/node-api';

const queries = process.argv.slice(2);
if (queries.length === 0) { console.error('usage: duckdb-batch.mjs SQL [SQL ...]'); process.exit(2); }

function cell(v) {
  if (v === null || v === undefined) return '';
  let s = typeof v === 'bigint' ? v.toString() : (typeof v === 'object' ? v.toString() : String(v));
  if (/[",\r\n]/.test(s)) s = '"' + s.replace(/"/g, '""') + '"';
  return s;
}

const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await db.connect();
const out = [];
for (const sql of queries) {
  try {
    const reader = await con.runAndReadAll(sql);
    out.push(reader.getRows().map((row) => row.map(cell).join(',')).join('\n'));
  } catch (e) {
    console.error(`${sql}: ${String(e.message || e)}`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
