// Differential test of tidemark's nested Parquet decoding (issue 16) against
// DuckDB: nested columns (LIST, STRUCT, MAP at any depth) loaded natively
// (the default: DuckDB LIST / STRUCT / MAP columns, JSON values in the JSON
// output, JSON text in the sqlite engine), and loaded with the dataset key
// `unsupported_type_action: string` as JSON text, must equal DuckDB's
// to_json() of the same column, row by row; so must DuckDB's to_json() of the
// natively stored column (queried through tidemark). Files:
//   - a file DuckDB writes here (lists, structs, maps, lists of structs, maps
//     of lists, lists of lists of lists, nulls at every level, empty lists,
//     several leaf types, several row groups), and
//   - two files arrow-rs writes here (parquet-wasm, from apache-arrow tables:
//     version 1 pages with dictionaries, version 2 pages without; lists,
//     structs in structs, maps of lists, lists of lists of lists, dates and
//     zoned timestamps inside structs, nulls and empties at every level), and
//   - the nested files of ../shared/testdata/parquet written by parquet-mr,
//     Spark, Hive, arrow-rs and parquet-cpp (legacy two- and three-level lists,
//     repeated fields outside lists, maps without values).
// Each file is read federated and loaded into the duckdb engine (DuckDB's
// file into the sqlite engine too, and printed by `tidemark parquet cat
// --nested-json --format json`, whose nested values are JSON values).
// Usage: TM_BIN=... TM_TESTDATA=... node nested-difftest.mjs WORKDIR
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { DuckDBInstance } from '@duckdb/node-api';

const bin = process.env.TM_BIN;
const testdata = process.env.TM_TESTDATA;
const work = process.argv[2];
if (!bin || !testdata || !work) {
  console.error('usage: TM_BIN=... TM_TESTDATA=... node nested-difftest.mjs WORKDIR');
  process.exit(2);
}

const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await db.connect();

const own = join(work, 'duckdb_nested.parquet');
await con.run(`COPY (
  SELECT i AS id,
    CASE WHEN i % 7 = 0 THEN NULL WHEN i % 5 = 0 THEN [] ELSE [i, NULL, i * 2] END AS lst,
    CASE WHEN i % 6 = 0 THEN NULL ELSE {'x': CASE WHEN i % 4 = 0 THEN NULL ELSE i END,
                                       'y': 'v' || i, 'z': {'d': DATE '2026-01-01' + i::INT, 'f': i / 4}} END AS st,
    CASE WHEN i % 9 = 0 THEN NULL WHEN i % 3 = 0 THEN MAP {} ELSE MAP {'k' || i: i, 'n': NULL} END AS m,
    CASE WHEN i % 8 = 0 THEN NULL
         ELSE [{'a': i, 'b': CASE WHEN i % 2 = 0 THEN NULL ELSE ['p', NULL] END}, NULL, {'a': NULL, 'b': []}] END AS los,
    CASE WHEN i % 10 = 0 THEN NULL ELSE MAP {'m': [i, NULL], 'e': [], 'n': NULL} END AS mol,
    [[[i, i + 1], []], NULL, [NULL, [NULL]]] AS lll,
    [true, false, NULL] AS bools,
    {'t': TIMESTAMP '2026-11-30 10:00:00' + INTERVAL (i) SECOND, 'dec': (i * 1.25)::DECIMAL(10, 2),
     'dbl': i * 0.5, 'big': 9007199254740 * i} AS scalars,
    MAP {i: [{'q': 'x'}]} AS intmap,
    [i - 600, -9223372036854775808, 9223372036854775807]::BIGINT[] AS extremes,
    CASE WHEN i % 4 = 0 THEN [] WHEN i % 11 = 0 THEN NULL
         ELSE [(i - 600)::INTEGER, NULL, -2147483648, 2147483647] END AS ints
  FROM range(0, 1200) t(i)
) TO '${own}' (FORMAT PARQUET, ROW_GROUP_SIZE 500)`);

// The second independent writer: arrow-rs (parquet-wasm), from Arrow tables apache-arrow builds:
// version 1 pages with dictionaries and snappy, and version 2 pages, plain, zstd.
const require = createRequire(import.meta.url);
const pw = require('parquet-wasm/node');
function arrowrsFile(path, v2) {
  const n = 1000;
  const col = { id: [], lst: [], st: [], m: [], los: [], lll: [], mol: [], bools: [], big: [] };
  for (let i = 0; i < n; i++) {
    col.id.push(BigInt(i));
    col.lst.push(i % 7 === 0 ? null : i % 5 === 0 ? [] : [i - 500, null, -2147483648, 2147483647]);
    col.st.push(i % 6 === 0 ? null : {
      x: i % 4 === 0 ? null : i, y: i % 9 === 0 ? null : 'v' + i,
      z: i % 10 === 0 ? null : { f: i / 4, d: new Date(Date.UTC(2024, 0, 1) + i * 86400000), t: 1764496800000 + i * 1001 } });
    col.m.push(i % 9 === 0 ? null : i % 3 === 0 ? new Map() : new Map([['k' + i, i], ['n', null]]));
    col.los.push(i % 8 === 0 ? null : [{ a: i, b: i % 2 ? ['p', null, ''] : null }, null, { a: null, b: [] }]);
    col.lll.push(i % 11 === 0 ? null : [[[i, i + 1], []], null, [null, [null]]]);
    col.mol.push(i % 10 === 0 ? null : new Map([['m', [BigInt(i), null]], ['e', []], ['n', null]]));
    col.bools.push(i % 12 === 0 ? [] : [true, false, null]);
    col.big.push([BigInt(i) - 600n, -9223372036854775808n, 9223372036854775807n]);
  }
  const f = (name, type, nullable = true) => new arrow.Field(name, type, nullable);
  const list = (t) => new arrow.List(f('item', t));
  const map = (k, v) => new arrow.Map_(f('entries', new arrow.Struct([f('key', k, false), f('value', v)]), false));
  const types = {
    id: new arrow.Int64(),
    lst: list(new arrow.Int32()),
    st: new arrow.Struct([f('x', new arrow.Int32()), f('y', new arrow.Utf8()), f('z', new arrow.Struct([
      f('f', new arrow.Float64()), f('d', new arrow.DateDay()),
      f('t', new arrow.TimestampMicrosecond('UTC'))]))]),
    m: map(new arrow.Utf8(), new arrow.Int32()),
    los: list(new arrow.Struct([f('a', new arrow.Int32()), f('b', list(new arrow.Utf8()))])),
    lll: list(list(list(new arrow.Int32()))),
    mol: map(new arrow.Utf8(), list(new arrow.Int64())),
    bools: list(new arrow.Bool()),
    big: list(new arrow.Int64()),
  };
  const vectors = {};
  for (const [k, t] of Object.entries(types)) vectors[k] = arrow.vectorFromArray(col[k], t);
  const ipc = arrow.tableToIPC(new arrow.Table(vectors), 'stream');
  let b = new pw.WriterPropertiesBuilder().setMaxRowGroupSize(300);
  b = v2 ? b.setWriterVersion(pw.WriterVersion.V2).setDictionaryEnabled(false).setCompression(pw.Compression.ZSTD)
    : b.setCompression(pw.Compression.SNAPPY);
  writeFileSync(path, pw.writeParquet(pw.Table.fromIPCStream(ipc), b.build()));
}
const arrowrs = [join(work, 'arrowrs_nested_v1.parquet'), join(work, 'arrowrs_nested_v2.parquet')];
arrowrsFile(arrowrs[0], false);
arrowrsFile(arrowrs[1], true);

const corpus = [
  'nested_lists.snappy.parquet', 'nested_maps.snappy.parquet', 'nested_structs.rust.parquet',
  'list_columns.parquet', 'old_list_structure.parquet', 'repeated_primitive_no_list.parquet',
  'null_list.parquet',
].map((f) => join(testdata, 'parquet', f));
// Files DuckDB cannot read ("MAP_KEY_VALUE requires two children"): compared
// with the values shipped with them. map_no_value.parquet (same error) has
// none: its map of NULL values and its map without a value column must read
// the same.
const expected = [['incorrect_map_schema.parquet', 'expected_hyparquet/incorrect_map_schema.json', 'my_map']];

function nestedType(t) {
  return /\[\d*\]$/.test(t) || /^(STRUCT|MAP)\(/.test(t);
}

// Every statement through one `tidemark sql` (statements piped on stdin; one
// JSON array per line).
function tmSqlAll(cfg, stmts) {
  const r = spawnSync(bin, ['sql', '-c', cfg, '--format', 'json'],
    { encoding: 'utf8', maxBuffer: 256 << 20, input: stmts.map((q) => q + ';\n').join('') });
  if (r.status !== 0) throw new Error(`tidemark sql failed (${r.status ?? r.signal}): ${r.stderr}`);
  const lines = r.stdout.split('\n').filter((l) => l.length);
  if (lines.length !== stmts.length) throw new Error(`${lines.length} answers to ${stmts.length} statements: ${r.stderr}`);
  return lines.map((l) => JSON.parse(l));
}

function tmRefresh(cfg) {
  const r = spawnSync(bin, ['refresh', '-c', cfg], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tidemark refresh failed (${r.status}): ${r.stderr}`);
}

// Values compare exactly, except numbers (DuckDB prints floats with 17
// digits, tidemark with the fewest that read back the same float) and
// timestamps (tidemark's text form is RFC 3339, `2026-11-30T10:00:00`,
// DuckDB's has a space; a zone as `Z` or `+00`).
function same(a, b, anyOrder = false) {
  if (a === null || b === null) return a === b;
  if (typeof a === 'number' && typeof b === 'number')
    return a === b || Math.abs(a - b) <= 1e-6 * Math.max(Math.abs(a), Math.abs(b));
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => same(x, b[i], anyOrder));
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a), kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    if (anyOrder) return ka.every((k) => k in b && same(a[k], b[k], anyOrder));
    return ka.every((k, i) => k === kb[i] && same(a[k], b[k]));
  }
  // A zoned timestamp (tidemark reads legacy TIMESTAMP_MILLIS/MICROS as UTC,
  // DuckDB as local time) prints `Z` in tidemark's form, `+00` in DuckDB's.
  const ts = (x) => x.replace('T', ' ').replace(/(Z|\+00)$/, '');
  if (typeof a === 'string' && typeof b === 'string' && /^\d{4,}-\d\d-\d\d[T ]\d\d:/.test(a))
    return ts(a) === ts(b);
  return a === b;
}

let failures = 0, checked = 0;
const q = (c) => `"${c.replace(/"/g, '""')}"`;
const engine = { duck: 'duckdb', lite: 'sqlite' };
const cases = [];
let yaml = 'datasets:\n';
for (const [n, file] of [own, ...arrowrs, ...corpus].entries()) {
  if (!existsSync(file)) throw new Error(`missing test file ${file}`);
  const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM '${file}'`)).getRowObjects();
  const cols = desc.filter((d) => nestedType(String(d.column_type))).map((d) => String(d.column_name));
  if (cols.length === 0) throw new Error(`${file}: DuckDB sees no nested column`);
  const want = (await con.runAndReadAll(
    `SELECT ${cols.map((c) => `to_json(${q(c)})::VARCHAR AS ${q(c)}`).join(', ')} FROM '${file}'`)).getRowObjects();
  // n*: native (no unsupported_type_action); the others JSON text (string).
  const tables = n <= arrowrs.length ? ['fed', 'duck', 'lite', 'nfed', 'nduck', 'nlite'] : ['fed', 'duck', 'nfed', 'nduck'];
  for (const t of tables) {
    const native = t.startsWith('n'), base = native ? t.slice(1) : t;
    yaml += `  - from: file:${file}\n    name: f${n}_${t}\n`;
    if (!native) yaml += `    unsupported_type_action: string\n`;
    if (base !== 'fed') yaml += `    acceleration: {engine: ${engine[base]}, mode: file}\n`;
    // Federated rows come in file order; accelerated tables keep the load order.
    cases.push({ name: file.split('/').pop(), table: `f${n}_${t}`, kind: t, cols, want });
    if (native && base !== 'lite')
      cases.push({ name: file.split('/').pop(), table: `f${n}_${t}`, kind: `${t}, DuckDB's to_json of the stored column`,
        cols, want, select: cols.map((c) => `to_json(${q(c)})::VARCHAR AS ${q(c)}`).join(', ') });
  }
}
for (const [n, [f, json, col]] of expected.entries()) {
  const want = JSON.parse(readFileSync(join(testdata, 'parquet', json), 'utf8')).map((r) => ({ [col]: r[0] }));
  yaml += `  - from: file:${join(testdata, 'parquet', f)}\n    name: e${n}_fed\n    unsupported_type_action: string\n`;
  cases.push({ name: f, table: `e${n}_fed`, kind: `fed, vs ${json}`, cols: [col], want, parsed: true });
  yaml += `  - from: file:${join(testdata, 'parquet', f)}\n    name: e${n}_nfed\n`;
  cases.push({ name: f, table: `e${n}_nfed`, kind: `nfed, vs ${json}`, cols: [col], want, parsed: true });
}
const cfg = join(work, 'tm.yaml');
writeFileSync(cfg, yaml);
tmRefresh(cfg);
{
  // A second refresh keeps every acceleration: the sqlite engine stores nested
  // columns as text, which is still the source's schema (no B9 rebuild).
  const r = spawnSync(bin, ['refresh', '-c', cfg], { encoding: 'utf8', env: { ...process.env, TIDEMARK_LOG: 'info' } });
  const rebuilt = r.stderr.split('\n').filter((l) => l.includes("the source's schema changed"));
  if (r.status !== 0 || rebuilt.length) {
    failures++;
    console.log(`FAIL second refresh: exit ${r.status}; ${rebuilt.join('; ') || r.stderr.slice(0, 300)}`);
  } else console.log('ok   second refresh: no acceleration rebuilt for a schema change');
}
const answers = tmSqlAll(cfg, cases.map((c) => `SELECT ${c.select ?? c.cols.map(q).join(', ')} FROM ${c.table}`));
for (const [i, c] of cases.entries()) {
  const got = answers[i], want = c.want;
  let bad = got.length !== want.length ? `${got.length} rows, expected ${want.length}` : null;
  for (let r = 0; !bad && r < want.length; r++) {
    for (const col of c.cols) {
      const w = c.parsed ? want[r][col] : want[r][col] === null ? null : JSON.parse(want[r][col]);
      // JSON text (string, sqlite, to_json) parses; a native value is JSON already.
      const g = typeof got[r][col] === 'string' ? JSON.parse(got[r][col]) : got[r][col];
      if (c.kind.startsWith('n') && !c.select && !c.kind.startsWith('nlite') && typeof got[r][col] === 'string') {
        bad = `row ${r} column ${col}: a native value came out as text: ${got[r][col]}`;
        break;
      }
      if (!same(g, w, !!c.parsed)) {
        bad = `row ${r} column ${col}: tidemark ${got[r][col]}, expected ${JSON.stringify(w)}`;
        break;
      }
      checked++;
    }
  }
  if (bad) failures++;
  console.log(bad ? `FAIL ${c.name} (${c.kind}): ${bad}` : `ok   ${c.name} (${c.kind}): ${want.length} rows, columns ${c.cols.join(', ')}`);
}
{
  const cfg2 = join(work, 'map_no_value.yaml');
  writeFileSync(cfg2, `datasets:\n  - from: file:${join(testdata, 'parquet', 'map_no_value.parquet')}\n    name: fed\n    unsupported_type_action: string\n`);
  const [got] = tmSqlAll(cfg2, ['SELECT my_map, my_map_no_v FROM fed']);
  const ok = got.length === 3 && got.every((r) => r.my_map === r.my_map_no_v && r.my_map !== null);
  if (!ok) failures++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} map_no_value.parquet (fed): my_map = my_map_no_v: ${JSON.stringify(got)}`);
}
// `tidemark parquet cat [--nested-json] --format json`: nested values as JSON values.
for (const flags of [['--nested-json'], ['--nested']]) {
  const c = cases[0];
  const r = spawnSync(bin, ['parquet', 'cat', ...flags, '--format', 'json', own],
    { encoding: 'utf8', maxBuffer: 256 << 20 });
  let bad = r.status !== 0 ? `exit ${r.status}: ${r.stderr}` : null;
  const got = bad ? [] : JSON.parse(r.stdout);
  if (!bad && got.length !== c.want.length) bad = `${got.length} rows, expected ${c.want.length}`;
  for (let i = 0; !bad && i < c.want.length; i++)
    for (const col of c.cols) {
      const w = c.want[i][col] === null ? null : JSON.parse(c.want[i][col]);
      if (!same(got[i][col], w)) {
        bad = `row ${i} column ${col}: ${JSON.stringify(got[i][col])}, DuckDB ${c.want[i][col]}`;
        break;
      }
      checked++;
    }
  if (bad) failures++;
  console.log(`${bad ? 'FAIL' : 'ok  '} ${c.name} (parquet cat ${flags.join(' ')}): ${bad ?? `${c.want.length} rows`}`);
}
console.log(`${checked} values compared`);
process.exit(failures ? 1 : 0);
