// DuckDB's side of bench/engine.sh: the same events data, built in memory with
// DuckDB SQL from the formula bench_engine.c uses, then the same four queries
// (best of several runs, THREADS threads). Prints "RESULT duckdb <metric> <value>"
// and "CHECK duckdb <query> <rows>" lines like bench_engine.
// Usage: node engine_duckdb.mjs ROWS RANGE_LO RANGE_HI [THREADS]
import { createRequire } from 'node:module';
import path from 'node:path';

const root = process.env.TM_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const require = createRequire(path.join(root, 'tests/node/package.json'));
const { DuckDBInstance } = require('duckdb-lts'); // the DuckDB release tidemark links

const [rows, lo, hi] = [BigInt(process.argv[2] || '10000000'), process.argv[3], process.argv[4]];
const db = await DuckDBInstance.create(':memory:', { threads: process.argv[5] || '1' });
const con = await db.connect();

let t0 = performance.now();
await con.run(`CREATE TABLE events AS SELECT
    i AS id,
    TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i * 3) AS ts,
    CAST(TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i * 3) AS DATE) AS day,
    CAST(i * 7919 % 100000 AS INTEGER) AS user_id,
    ['click', 'view', 'purchase', 'cart', 'search', 'login', 'logout', 'share'][i % 8 + 1] AS kind,
    CAST(i * 37 % 100000 AS DOUBLE) / 100.0 AS amount,
    'payload-' || lpad(CAST(i AS VARCHAR), 32, '0') AS payload
  FROM range(${rows}) t(i)`);
const build = (performance.now() - t0) / 1000;
console.log(`duckdb         built ${rows} rows in ${build.toFixed(2)} s (CREATE TABLE AS, reference)`);
console.log(`RESULT duckdb ingest_rows_per_s ${(Number(rows) / build).toFixed(0)}`);

const point = `SELECT * FROM events WHERE id = ${rows * 3n / 4n + 21n}`;
const range = `SELECT count(*), sum(amount) FROM events WHERE ts >= TIMESTAMP '${lo}' AND ts < TIMESTAMP '${hi}'`;
const queries = [
  ['q_count_ms', 'SELECT count(*) FROM events', 3],
  ['q_groupby_ms', 'SELECT kind, sum(amount) FROM events GROUP BY kind', 3],
  ['q_range_ms', range, 5],
  ['q_point_ms', point, 9],
];
for (const [metric, sql, runs] of queries) {
  let best = Infinity;
  for (let r = 0; r <= runs; r++) {
    t0 = performance.now();
    await con.runAndReadAll(sql);
    const ms = performance.now() - t0;
    if (r > 0 && ms < best) best = ms;
  }
  console.log(`duckdb         ${metric.padEnd(13)} ${best.toFixed(2).padStart(9)} ms`);
  console.log(`RESULT duckdb ${metric} ${best.toFixed(3)}`);
}

async function check(label, sql) {
  const reader = await con.runAndReadAll(sql);
  const lines = [reader.columnNames().join(',')];
  for (const row of reader.getRows()) lines.push(row.map((v) => (v === null ? '' : String(v))).join(','));
  console.log(`CHECK duckdb ${label} ${lines.join('|')}`);
}
await check('count', 'SELECT count(*) FROM events');
await check('groupby', "SELECT kind, printf('%.2f', sum(amount)) FROM events GROUP BY kind ORDER BY kind");
await check('range', `SELECT count(*), printf('%.2f', sum(amount)) FROM events WHERE ts >= TIMESTAMP '${lo}' AND ts < TIMESTAMP '${hi}'`);
