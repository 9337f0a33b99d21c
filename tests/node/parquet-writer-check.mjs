// Checks a Parquet file written by tidemark with DuckDB (issue 3): DuckDB must
// read the same values (its canonical CSV equals EXPECTED_CSV, rendered by
// tidemark from the batch it wrote), and the statistics DuckDB reports with
// parquet_metadata() must equal DuckDB's own aggregates over each row group
// (min and max ignoring NaN, null count; DuckDB shows no infinite float bound).
// Usage: node parquet-writer-check.mjs FILE EXPECTED_CSV
import { readFileSync } from 'node:fs';
import { canonical, openDuckDB } from './parquet-canonical.mjs';

const [file, expectedPath] = process.argv.slice(2);
const con = await openDuckDB();
let failed = 0;
const fail = (msg) => { console.error('FAIL ' + msg); failed++; };

const got = await canonical(con, file);
const want = readFileSync(expectedPath, 'utf8');
if (got !== want) {
  const a = got.split('\r\n'), b = want.split('\r\n');
  const i = a.findIndex((l, k) => l !== b[k]);
  fail(`values differ at line ${i + 1}:\n  duckdb   ${String(a[i]).slice(0, 300)}\n  tidemark ${String(b[i]).slice(0, 300)}`);
}

const q = (sql) => con.runAndReadAll(sql).then((r) => r.getRows());
const lit = `'${file.replace(/'/g, "''")}'`;
const types = new Map((await q(`DESCRIBE SELECT * FROM read_parquet(${lit})`)).map((r) => [String(r[0]), String(r[1])]));
const meta = await q(`SELECT row_group_id, row_group_num_rows, path_in_schema, stats_min_value, stats_max_value, stats_null_count
                        FROM parquet_metadata(${lit}) ORDER BY row_group_id, column_id`);
const starts = new Map();
let start = 0n;
for (const [rg, rows] of meta) if (!starts.has(rg)) { starts.set(rg, start); start += BigInt(rows); }
const str = (v) => (v === null || v === undefined ? null : String(v));
let checked = 0;
for (const [rg, rows, col, smin, smax, snull] of meta) {
  const c = '"' + String(col).replace(/"/g, '""') + '"';
  const t = types.get(String(col));
  const isFloat = t === 'FLOAT' || t === 'DOUBLE';
  const nonNan = isFloat ? ` FILTER (WHERE NOT isnan(${c}))` : '';
  const lo = starts.get(rg), hi = lo + BigInt(rows) - 1n;
  const [agg] = await q(`SELECT CAST(min(${c})${nonNan} AS VARCHAR), CAST(max(${c})${nonNan} AS VARCHAR), count(*) - count(${c})
                           FROM read_parquet(${lit}, file_row_number = true) WHERE file_row_number BETWEEN ${lo} AND ${hi}`);
  const [amin, amax, anull] = agg.map(str);
  if (str(snull) !== anull) fail(`${col} row group ${rg}: null_count ${snull}, data has ${anull}`);
  // parquet_metadata() leaves infinite float bounds out (also in DuckDB's own files).
  const eq = (s, a) => (isFloat && s === null && /^-?inf/.test(a ?? '') ? true
                        : isFloat && s !== null && a !== null ? Number(s) === Number(a) : s === a);
  const longBound = (amin && amin.length > 65536) || (amax && amax.length > 65536);
  if (longBound) {
    if (str(smin) !== null || str(smax) !== null) fail(`${col} row group ${rg}: bounds over 64 KiB were written`);
  } else {
    if (!eq(str(smin), amin)) fail(`${col} row group ${rg}: min ${str(smin)?.slice(0, 80)}, data ${amin?.slice(0, 80)}`);
    if (!eq(str(smax), amax)) fail(`${col} row group ${rg}: max ${str(smax)?.slice(0, 80)}, data ${amax?.slice(0, 80)}`);
  }
  checked++;
}
console.log(`${file}: ${got.split('\r\n').length - 2} rows equal, ${checked} column chunks' statistics checked, ${failed} failures`);
process.exit(failed ? 1 : 0);
