// The peer side of bench/query.sh (issue 15): each query of the suite timed
// three ways in one run, on the same rows:
//   tidemark  POST /v1/sql to a running `tidemark run` (cayenne, file mode),
//             from this process over one keep-alive connection;
//   table     DuckDB over its own table of the rows (a database file made
//             with CREATE TABLE AS from the Parquet files), in process;
//   parquet   DuckDB over the raw Parquet files (read_parquet), in process.
// DuckDB here is the release tidemark links (duckdb-lts in tests/node), with
// as many threads as tidemark's. Each figure is the median of RUNS runs
// after one warm-up. Before timing, every query's answer from tidemark must
// equal DuckDB's (all columns cast to VARCHAR).
// Usage: node query.mjs BASE_URL DUCKDB_FILE PARQUET_GLOB THREADS RUNS
//        node query.mjs --load DUCKDB_FILE PARQUET_GLOB THREADS   (makes the table acc)
// Prints "RESULT <query> <tidemark_ms> <table_ms> <parquet_ms>" per query; --load
// prints "seconds=S rows=N".
import { createRequire } from 'node:module';
import path from 'node:path';

const root = process.env.TM_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const require = createRequire(path.join(root, 'tests/node/package.json'));
const { DuckDBInstance } = require('duckdb-lts');

if (process.argv[2] === '--load') {
  const [dbFile, glob, threads] = process.argv.slice(3);
  const inst = await DuckDBInstance.create(dbFile, { threads: String(threads) });
  const c = await inst.connect();
  const t0 = performance.now();
  await c.run(`CREATE OR REPLACE TABLE acc AS SELECT * FROM read_parquet('${glob}')`);
  await c.run('CHECKPOINT');
  const secs = (performance.now() - t0) / 1000;
  const rows = (await c.runAndReadAll('SELECT count(*) FROM acc')).getRows()[0][0];
  console.log(`seconds=${secs.toFixed(3)} rows=${rows}`);
  process.exit(0);
}
const [base, dbFile, glob, threads, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 7);
const db = await DuckDBInstance.create(dbFile, { threads: String(threads) });
const con = await db.connect();
await con.run(`CREATE OR REPLACE TEMP VIEW raw AS SELECT * FROM read_parquet('${glob}')`);

const lo = "TIMESTAMP '2024-01-06 00:00:00'", hi = "TIMESTAMP '2024-01-06 02:46:40'"; // 1% of the rows
const suite = [
  ['count', 'SELECT count(*) FROM {t}'],
  ['groupby_low', 'SELECT kind, count(*) AS n, sum(amount) AS s FROM {t} GROUP BY kind ORDER BY kind'],
  ['groupby_high', 'SELECT user_id, count(*) AS n, sum(amount) AS s FROM {t} GROUP BY user_id ORDER BY n DESC, s DESC, user_id LIMIT 10'],
  ['count_distinct', 'SELECT count(DISTINCT user_id) FROM {t}'],
  ['top10_by_ts', 'SELECT * FROM {t} ORDER BY ts DESC, id DESC LIMIT 10'],
  ['range_1pct', `SELECT count(*), sum(amount) FROM {t} WHERE ts >= ${lo} AND ts < ${hi}`],
  ['point', 'SELECT * FROM {t} WHERE id = 7654321'],
  ['filtered_groupby', "SELECT kind, count(*) AS n, avg(amount) AS a FROM {t} WHERE day = DATE '2024-01-05' AND amount > 5000 GROUP BY kind ORDER BY kind"],
  ['hourly', "SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM {t} WHERE ts < TIMESTAMP '2024-01-03' GROUP BY h ORDER BY h"],
  ['like', "SELECT count(*) FROM {t} WHERE payload LIKE 'ab%'"],
];
const fill = (q, t) => q.replaceAll('{t}', t);

async function http(sql) {
  const res = await fetch(`${base}/v1/sql`, { method: 'POST', body: sql, headers: { Accept: 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`tidemark: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return text;
}
async function local(sql) {
  return (await con.runAndReadAll(sql)).getRows();
}
async function median(fn) {
  await fn();
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return t[Math.floor(t.length / 2)];
}

// Sums of doubles depend on the order of addition (DuckDB aggregates in
// parallel): numbers agree within a relative 1e-9, everything else exactly.
const same = (a, b) => a.length === b.length && a.every((row, i) => row.length === b[i].length &&
  row.every((v, k) => {
    const u = b[i][k];
    if (v === u) return true;
    const x = Number(v), y = Number(u);
    return v !== null && u !== null && Number.isFinite(x) && Number.isFinite(y) &&
      Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
  }));
let bad = 0;
for (const [name, q] of suite) {
  const wrap = (t) => `SELECT COLUMNS(*)::VARCHAR FROM (${fill(q, t)}) AS q`;
  const got = JSON.parse(await http(wrap('events'))).map((o) => Object.values(o));
  const want = (await local(wrap('acc'))).map((r) => r.map((v) => (v === null ? null : String(v))));
  if (!same(got, want)) {
    console.error(`${name}: tidemark and DuckDB differ\n  tidemark ${JSON.stringify(got).slice(0, 300)}\n  DuckDB   ${JSON.stringify(want).slice(0, 300)}`);
    bad++;
  }
}
if (bad) process.exit(1);

for (const [name, q] of suite) {
  const ours = await median(() => http(fill(q, 'events')));
  const table = await median(() => local(fill(q, 'acc')));
  const raw = await median(() => local(fill(q, 'raw')));
  console.log(`RESULT ${name} ${ours.toFixed(3)} ${table.toFixed(3)} ${raw.toFixed(3)}`);
}
