// DuckDB peer of bench/refresh.sh (issue 6): a DuckDB file database kept fresh
// the way a user would do it by hand, one thread, timed inside DuckDB's process.
//   node bench-refresh.mjs load DB FILE...            CREATE TABLE acc AS SELECT * FROM read_parquet(...)
//   node bench-refresh.mjs append DB OVERLAP_S FILE... rows above max(ts) - overlap, de-duplicated
//                                                      exactly against the stored rows of that window
// Prints "seconds=S rows=N" (rows inserted).
import { DuckDBInstance } from 'duckdb-lts'; // the DuckDB release tidemark links

const [mode, db, ...rest] = process.argv.slice(2);
const inst = await DuckDBInstance.create(db, { threads: '1' });
const con = await inst.connect();
const list = (files) => '[' + files.map((f) => `'${f}'`).join(', ') + ']';
const t0 = process.hrtime.bigint();
let rows = 0n;
if (mode === 'load') {
  await con.run('DROP TABLE IF EXISTS acc');
  await con.run(`CREATE TABLE acc AS SELECT * FROM read_parquet(${list(rest)})`);
  rows = (await con.runAndReadAll('SELECT count(*) FROM acc')).getRows()[0][0];
} else if (mode === 'append') {
  const [overlap, ...files] = rest;
  const bound = `(SELECT max(ts) FROM acc) - to_seconds(${overlap})`;
  const r = await con.runAndReadAll(
    `INSERT INTO acc SELECT * FROM (
       SELECT * FROM read_parquet(${list(files)}) WHERE ts >= ${bound}
       EXCEPT ALL
       SELECT * FROM acc WHERE ts >= ${bound})`);
  rows = r.getRows()[0][0];
} else {
  console.error('usage: bench-refresh.mjs load|append DB ...');
  process.exit(2);
}
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(`seconds=${secs.toFixed(3)} rows=${rows}`);
