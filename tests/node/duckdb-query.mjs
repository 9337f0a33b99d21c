// Runs SQL in an in-memory DuckDB (threads=1) and prints the result as CSV with
// a header row, for tests that compare tidemark with an independent engine.
// Usage: node duckdb-query.mjs "SQL" [--db FILE]
import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
let sql = null, dbPath = ':memory:';
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--db') dbPath = args[++i];
  else sql = args[i];
}
if (!sql) { console.error('usage: duckdb-query.mjs SQL [--db FILE]'); process.exit(2); }

function cell(v) {
  if (v === null || v === undefined) return '';
  let s = typeof v === 'bigint' ? v.toString() : (typeof v === 'object' ? v.toString() : String(v));
  if (/[",\r\n]/.test(s)) s = '"' + s.replace(/"/g, '""') + '"';
  return s;
}

const db = await DuckDBInstance.create(dbPath, { threads: '1' });
const con = await db.connect();
try {
  const reader = await con.runAndReadAll(sql);
  const names = reader.columnNames();
  const out = [names.map(cell).join(',')];
  for (const row of reader.getRows()) out.push(row.map(cell).join(','));
  process.stdout.write(out.join('\n') + '\n');
} catch (e) {
  console.error(String(e.message || e));
  process.exit(1);
}
