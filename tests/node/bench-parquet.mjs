// DuckDB side of bench/parquet.sh: generates the events data set once and
// times DuckDB (threads=1) on the same scans as bench/bench_parquet.c.
//
//   node bench-parquet.mjs gen DIR FILES ROWS_PER_FILE   events-<i>.parquet, ZSTD
//   node bench-parquet.mjs gen-big DIR ROWS               events-big.parquet (one file)
//   node bench-parquet.mjs gen-nested DIR ROWS            nested.parquet: id BIGINT, l INTEGER[10]
//   node bench-parquet.mjs decode FILE...                 full decode of every column
//   node bench-parquet.mjs project LO HI FILE...          ts, amount with ts in [LO, HI] (us)
//
// Columns: id BIGINT, ts TIMESTAMP (100 ms apart across all files), day DATE,
// user_id INT, kind VARCHAR (8 values), amount DOUBLE, payload VARCHAR (40
// hex characters). "Full decode" is EXPLAIN ANALYZE SELECT * (DuckDB scans
// every column and discards the rows), timed from this process, best of 3.
import { DuckDBInstance } from '@duckdb/node-api';
import { existsSync, renameSync } from 'node:fs';

const [mode, ...args] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await db.connect();

function select(from, to) {
  const ts = `TIMESTAMP '2024-01-01' + to_microseconds(g * 100000)`;
  return `SELECT g AS id, ${ts} AS ts, (${ts})::DATE AS day, (hash(g) % 100000)::INTEGER AS user_id,
            (['click','view','buy','refund','share','login','logout','search'])[(hash(g * 7) % 8)::INTEGER + 1] AS kind,
            round((hash(g * 13) % 1000000) / 100.0, 2)::DOUBLE AS amount,
            md5(g::VARCHAR) || substr(md5((g + 1)::VARCHAR), 1, 8) AS payload
          FROM range(${from}, ${to}) t(g)`;
}

async function write(sql, path) {
  const tmp = path + '.tmp';
  await con.run(`COPY (${sql}) TO '${tmp}' (FORMAT parquet, COMPRESSION zstd)`);
  renameSync(tmp, path);
}

// Best of 3: wall seconds and CPU seconds (user + system of this process;
// steadier than wall time on a machine shared with other work).
async function best(sql) {
  let t = Infinity, c = Infinity;
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now(), c0 = process.cpuUsage();
    await con.runAndReadAll(sql);
    const cu = process.cpuUsage(c0);
    t = Math.min(t, performance.now() - t0);
    c = Math.min(c, (cu.user + cu.system) / 1e6);
  }
  return [t / 1000, c];
}

const list = (files) => '[' + files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ') + ']';

if (mode === 'gen') {
  const [dir, n, rows] = args;
  for (let i = 0; i < Number(n); i++) {
    const path = `${dir}/events-${i}.parquet`;
    if (!existsSync(path)) await write(select(i * Number(rows), (i + 1) * Number(rows)), path);
  }
} else if (mode === 'gen-big') {
  const [dir, rows] = args;
  const path = `${dir}/events-big.parquet`;
  if (!existsSync(path)) await write(select(0, Number(rows)), path);
} else if (mode === 'gen-nested') {
  // A list of 10 ints per row (issue 16's nested-decoding target), values varying per row.
  const [dir, rows] = args;
  const path = `${dir}/nested.parquet`;
  if (!existsSync(path)) {
    await write(`SELECT g AS id, list_transform(range(10), x -> (hash(g * 10 + x) % 1000000)::INTEGER) AS l
                 FROM range(0, ${Number(rows)}) t(g)`, path);
  }
} else if (mode === 'decode') {
  const [s, c] = await best(`EXPLAIN ANALYZE SELECT * FROM read_parquet(${list(args)})`);
  const [[rows]] = (await con.runAndReadAll(`SELECT count(*) FROM read_parquet(${list(args)})`)).getRows();
  console.log(`duckdb_decode seconds=${s.toFixed(3)} cpu_seconds=${c.toFixed(3)} rows=${rows} rows_per_s=${(Number(rows) / s).toFixed(0)}`);
} else if (mode === 'project') {
  const [lo, hi, ...files] = args;
  const where = `ts BETWEEN make_timestamp(${lo}) AND make_timestamp(${hi})`;
  const [full] = await best(`EXPLAIN ANALYZE SELECT ts, amount FROM read_parquet(${list(files)})`);
  const [pruned] = await best(`EXPLAIN ANALYZE SELECT ts, amount FROM read_parquet(${list(files)}) WHERE ${where}`);
  const [[rows]] = (await con.runAndReadAll(`SELECT count(*) FROM read_parquet(${list(files)}) WHERE ${where}`)).getRows();
  console.log(`duckdb_project full_seconds=${full.toFixed(3)} filtered_seconds=${pruned.toFixed(3)} matching_rows=${rows}`);
} else {
  console.error('usage: bench-parquet.mjs gen|gen-big|gen-nested|decode|project ...');
  process.exit(2);
}
