// Differential and hostile-input tests of tidemark's Parquet reader against
// DuckDB, over ../shared/testdata/parquet. Run by tests/integration/
// test_parquet_duckdb.sh (mode `corpus`) and test_parquet_bad.sh (mode `bad`).
//
// corpus: every file at the top level and in impala/, hyparquet/,
//   iceberg-encodings/ and arrow-testing/ is read by `tidemark parquet cat`
//   and by DuckDB (parquet-canonical.mjs); the two canonical CSVs must be
//   identical. Files with nested columns must fail with "unsupported nested
//   column NAME"; their flat columns are then compared. Files DuckDB cannot
//   read are compared with a twin file holding the same data, or with the
//   expected values shipped with them. Every file prints one line saying how
//   it was checked; special cases carry their reason. Nothing is skipped
//   silently.
// bad: every file in bad/ and encrypted/ must end in a clean read or an
//   error that names the file and a cause, with no sanitizer report and no
//   hang; clean reads are compared with DuckDB when DuckDB reads the file.
//
// Usage: node parquet-difftest.mjs corpus|bad [--markdown]
// Environment: TM_BIN (tidemark binary), TM_TESTDATA (../shared/testdata).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { canonical, csvField, fmtBlobHex, openDuckDB } from './parquet-canonical.mjs';

const mode = process.argv[2];
const markdown = process.argv.includes('--markdown');
const bin = process.env.TM_BIN;
const testdata = process.env.TM_TESTDATA;
if (!bin || !testdata || (mode !== 'corpus' && mode !== 'bad')) {
  console.error('usage: TM_BIN=... TM_TESTDATA=... node parquet-difftest.mjs corpus|bad');
  process.exit(2);
}
const root = join(testdata, 'parquet');

// Special cases of the corpus, by path relative to parquet/. Each says why.
const SPECIAL = {
  'hadoop_lz4_compressed.parquet': {
    twin: 'lz4_raw_compressed.parquet', json: 'expected_hyparquet/hadoop_lz4_compressed.json',
    why: 'DuckDB has no LZ4 (Hadoop) codec; same data as lz4_raw_compressed.parquet',
  },
  'hadoop_lz4_compressed_larger.parquet': {
    twin: 'lz4_raw_compressed_larger.parquet',
    why: 'DuckDB has no LZ4 (Hadoop) codec; same data as lz4_raw_compressed_larger.parquet',
  },
  'non_hadoop_lz4_compressed.parquet': {
    twin: 'lz4_raw_compressed.parquet',
    why: 'DuckDB has no LZ4 codec (raw blocks under the LZ4 id); same data as lz4_raw_compressed.parquet',
  },
  'byte_stream_split_extended.gzip.parquet': {
    duckColumns: ['float16_plain', 'float_plain', 'float_byte_stream_split', 'double_plain',
                  'double_byte_stream_split', 'int32_plain', 'int64_plain', 'flba5_plain', 'decimal_plain'],
    pairs: true, json: 'expected_hyparquet/byte_stream_split_extended.gzip.json',
    why: 'DuckDB reads BYTE_STREAM_SPLIT only for FLOAT/DOUBLE: those and the PLAIN columns are compared with DuckDB, each BYTE_STREAM_SPLIT column with its PLAIN twin column, all with the hyparquet values',
  },
  'int96_from_spark.parquet': {
    error: 'INT96 timestamp outside the range of timestamp(ns)', int96: 'ms', limit: 5,
    duckFrom: (src) => `(SELECT CAST(a AS TIMESTAMP_MS) AS a FROM ${src})`,
    why: 'row 6 lies outside the int64 range of ns and us (DuckDB wraps it to year -226413): refused by default; read with --int96 ms, rows 1-5 compared with DuckDB cast to milliseconds',
  },
  'impala/int64_timestamps_nano.parquet': {
    ourColumns: ['rawValue', 'nanoNonUtc'], duckColumns: ['rawValue', 'nanoNonUtc'],
    why: 'DuckDB reads TIMESTAMP(NANOS, UTC) as microsecond TIMESTAMPTZ (rounds, and maps the maximum to NULL); the other columns are compared',
  },
  'arrow-testing/ARROW-17100.parquet': {
    noReference: true,
    why: 'DuckDB fails ("Out of buffer": v2 pages written compressed with is_compressed=false) and no expected values ship with the file; read and checked for 5 rows only',
    rows: 5,
  },
};
for (const t of ['int32', 'int64', 'uuid', 'int32_with_nulls', 'int64_with_nulls', 'uuid_with_nulls']) {
  SPECIAL[`iceberg-encodings/BYTE_STREAM_SPLIT/${t}.parquet`] = {
    twin: `iceberg-encodings/PLAIN/${t}.parquet`,
    why: `DuckDB reads BYTE_STREAM_SPLIT only for FLOAT/DOUBLE; same data as PLAIN/${t}.parquet`,
  };
}

function listParquet(dir, recursive) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (recursive) out.push(...listParquet(p, true));
    } else if (/\.(parquet|parq)$/.test(name)) {
      out.push(p);
    }
  }
  return out;
}

function listAll(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listAll(p));
    else out.push(p);
  }
  return out;
}

// The real binary, one process per command line.
function tmProcess(args) {
  const r = spawnSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 28, timeout: 60000 });
  return { code: r.status, signal: r.signal, out: r.stdout || '', err: r.stderr || '' };
}

// Every command line through one process: tests/tools/cli_batch.c runs each through
// tidemark-core's own dispatch (tm_cli_main). Under the sanitizers a process start and
// its leak check at exit cost more than most reads of the corpus; the batch's leaks are
// reported when it exits (checked at the end), and a sanitizer error stops it, which
// fails the file that caused it (its report read from the batch's stderr file) and
// starts a new batch for the next. A few files are run both ways and must agree.
const batchBin = process.env.TM_BUILD_DIR && join(process.env.TM_BUILD_DIR, 'cli_batch');
if (!batchBin || !existsSync(batchBin)) {
  console.error(`parquet-difftest: no cli_batch in TM_BUILD_DIR (${process.env.TM_BUILD_DIR})`);
  process.exit(2);
}
const batchDir = mkdtempSync(join(tmpdir(), 'tm-pqbatch-'));
let batch = null;
let batchFailures = 0;

function startBatch() {
  const child = spawn(batchBin, [batchDir], { stdio: ['pipe', 'pipe', 'pipe'] });
  const b = { child, buf: '', waiting: null, exited: null, stderr: '' };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    b.buf += d;
    const nl = b.buf.indexOf('\n');
    if (nl >= 0 && b.waiting) {
      const line = b.buf.slice(0, nl);
      b.buf = b.buf.slice(nl + 1);
      const w = b.waiting;
      b.waiting = null;
      w.resolve(line);
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { b.stderr += d; });
  b.done = new Promise((resolve) => child.on('close', (code, signal) => {
    b.exited = { code, signal };
    if (b.waiting) { const w = b.waiting; b.waiting = null; w.reject(new Error('exited')); }
    resolve(b.exited);
  }));
  return b;
}

async function tm(args) {
  if (args.some((a) => /[\t\n]/.test(a))) throw new Error(`argument with a tab or newline: ${args}`);
  if (!batch) batch = startBatch();
  const b = batch;
  const reply = new Promise((resolve, reject) => { b.waiting = { resolve, reject }; });
  const timer = setTimeout(() => b.child.kill('SIGKILL'), 60000);
  b.child.stdin.write(args.join('\t') + '\n');
  try {
    const line = await reply;
    const m = /^exit (\d+)$/.exec(line);
    if (!m) throw new Error(`cli_batch: ${line}`);
    return { code: Number(m[1]), signal: null, out: readFileSync(join(batchDir, 'out'), 'utf8'),
             err: readFileSync(join(batchDir, 'err'), 'utf8') };
  } catch (e) {
    if (!b.exited) b.child.kill('SIGKILL'); /* a reply it should not give: do not wait for it */
    await b.done;
    batch = null;
    batchFailures++;
    const err = existsSync(join(batchDir, 'err')) ? readFileSync(join(batchDir, 'err'), 'utf8') : '';
    return { code: b.exited.code, signal: b.exited.signal || 'batch stopped', out: '', err: err + b.stderr };
  } finally {
    clearTimeout(timer);
  }
}

async function endBatch() {
  if (!batch) return true;
  batch.child.stdin.end();
  const { code, signal } = await batch.done;
  if (code === 0 && !signal) return true;
  console.log(`FAIL cli_batch exited with ${signal || code} (a leak report or a sanitizer error):\n${batch.stderr.slice(0, 4000)}`);
  return false;
}

// The same command line through the batch and the real binary: the same exit code, output and message.
async function sameAsBinary(args) {
  const a = await tm(args), p = tmProcess(args);
  if (a.code === p.code && a.out === p.out && a.err === p.err) return null;
  return `batch and binary differ on ${args.join(' ')}: exit ${a.code}/${p.code}, ` +
    `stdout ${a.out === p.out ? 'same' : 'differs'}, stderr [${a.err.trim().slice(0, 200)}] / [${p.err.trim().slice(0, 200)}]`;
}

// Cells of a CSV written by tm_out (RFC 4180).
function parseCsv(text) {
  const rows = [];
  let row = [], cell = '', quoted = false, i = 0, wasQuoted = false;
  while (i < text.length) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i += 2; continue; }
      if (ch === '"') { quoted = false; i++; continue; }
      cell += ch; i++; continue;
    }
    if (ch === '"') { quoted = true; wasQuoted = true; i++; continue; }
    if (ch === ',') { row.push(wasQuoted || cell !== '' ? cell : null); cell = ''; wasQuoted = false; i++; continue; }
    if (ch === '\r' && text[i + 1] === '\n') {
      row.push(wasQuoted || cell !== '' ? cell : null); rows.push(row);
      row = []; cell = ''; wasQuoted = false; i += 2; continue;
    }
    cell += ch; i++;
  }
  return rows;
}

function firstDiff(a, b) {
  const la = a.split('\r\n'), lb = b.split('\r\n');
  for (let i = 0; i < Math.max(la.length, lb.length); i++)
    if (la[i] !== lb[i]) return `line ${i + 1}: tidemark [${(la[i] ?? '<none>').slice(0, 200)}] duckdb [${(lb[i] ?? '<none>').slice(0, 200)}]`;
  return 'no difference';
}

// Compares our CSV with hyparquet's expected rows (JSON arrays of values).
function compareJson(ours, jsonPath) {
  const rows = parseCsv(ours).slice(1);
  const want = JSON.parse(readFileSync(jsonPath, 'utf8'));
  if (rows.length !== want.length) return `${rows.length} rows, expected ${want.length}`;
  for (let r = 0; r < rows.length; r++) {
    for (let c = 0; c < want[r].length; c++) {
      const got = rows[r][c], exp = want[r][c];
      let ok;
      if (exp === null) ok = got === null;
      else if (typeof exp === 'number') {
        const g = Number(got);
        ok = g === exp || Math.fround(g) === Math.fround(exp) || Math.abs(g - exp) <= 1e-9 * Math.abs(exp);
      } else if (typeof exp === 'boolean') ok = got === String(exp);
      else if (Array.isArray(exp)) ok = got === fmtBlobHex(Buffer.from(exp).toString('hex'));
      else ok = got === String(exp);
      if (!ok) return `row ${r + 1} column ${c + 1}: tidemark [${got}] expected [${JSON.stringify(exp)}]`;
    }
  }
  return null;
}

async function flatColumns(file) {
  const r = await tm(['parquet', 'schema', '--format', 'csv', file]);
  if (r.code !== 0) throw new Error(`schema failed: ${r.err.trim()}`);
  // Since e677932 `parquet schema` prints a nested column's whole type (list<..>,
  // struct<..>, map<..>) with an empty note, as it prints a flat one: flat means
  // an empty note and none of those types.
  return parseCsv(r.out).slice(1)
    .filter((row) => row[5] === '' && !/^(list|struct|map)</.test(row[1])).map((row) => row[0]);
}

function noSanitizer(r) {
  return !/AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer/.test(r.err) && !r.signal;
}

const results = [];
let failures = 0;
function report(rel, ok, how, detail = '') {
  results.push({ rel, ok, how, detail });
  if (!ok) failures++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${rel}: ${how}${detail ? ' — ' + detail : ''}`);
}

const con = await openDuckDB();

async function duck(file, columns = null, limit = null, from = null) {
  try {
    return { csv: await canonical(con, file, columns, limit, from) };
  } catch (e) {
    return { error: String(e.message || e).split('\n')[0] };
  }
}

async function corpusFile(file) {
  const rel = file.startsWith(root) ? relative(root, file)
    : /\/generated-[^/]*$/.test(file) ? 'generated/' + file.replace(/^.*\//, '')
    : file.replace(/^.*\/fuzz\//, 'fuzz/');
  const sp = SPECIAL[rel] || {};
  const full = await tm(['parquet', 'cat', file]);
  if (!noSanitizer(full)) return report(rel, false, 'sanitizer report or signal', full.err.slice(0, 300));

  if (sp.error) {
    if (full.code === 0 || !full.err.includes(sp.error) || !full.err.includes(file))
      return report(rel, false, `expected error "${sp.error}"`, full.err.trim().slice(0, 300));
    const args = ['parquet', 'cat', '--int96', sp.int96, '--limit', String(sp.limit), file];
    const ours = await tm(args);
    const d = await duck(file, null, sp.limit, sp.duckFrom);
    if (ours.code !== 0 || d.error || ours.out !== d.csv)
      return report(rel, false, sp.why, ours.code !== 0 ? ours.err.trim() : d.error || firstDiff(ours.out, d.csv));
    return report(rel, true, `error as expected; ${sp.why}`);
  }

  const nested = /unsupported nested column (\S+)/.exec(full.err);
  if (full.code !== 0 && !nested) return report(rel, false, 'tidemark failed', full.err.trim().slice(0, 300));
  if (nested) {
    if (!full.err.includes(file)) return report(rel, false, 'nested error does not name the file', full.err.trim());
    const flat = await flatColumns(file);
    if (flat.length === 0) return report(rel, true, `refused: unsupported nested column ${nested[1]} (no flat columns)`);
    const ours = await tm(['parquet', 'cat', '--columns', flat.join(','), file]);
    const d = await duck(file, flat);
    if (ours.code !== 0) return report(rel, false, 'flat columns failed', ours.err.trim());
    if (d.error) return report(rel, false, 'DuckDB failed on the flat columns', d.error);
    if (ours.out !== d.csv) return report(rel, false, 'flat columns differ from DuckDB', firstDiff(ours.out, d.csv));
    return report(rel, true, `refused: unsupported nested column ${nested[1]}; flat columns (${flat.length}) = DuckDB`);
  }

  if (sp.noReference) {
    const rows = parseCsv(full.out).length - 1;
    return report(rel, rows === sp.rows, `skipped comparison: ${sp.why}`, rows === sp.rows ? '' : `${rows} rows`);
  }

  const checks = [];
  let ours = full.out;
  if (sp.ourColumns) {
    const r = await tm(['parquet', 'cat', '--columns', sp.ourColumns.join(','), file]);
    if (r.code !== 0) return report(rel, false, 'projection failed', r.err.trim());
    ours = r.out;
  }
  if (sp.json) {
    const bad = compareJson(full.out, join(root, sp.json));
    if (bad) return report(rel, false, `differs from ${sp.json}`, bad);
    checks.push(`= ${sp.json}`);
  }
  if (sp.pairs) {
    const rows = parseCsv(full.out);
    for (let c = 0; c + 1 < rows[0].length; c += 2)
      for (let r = 1; r < rows.length; r++)
        if (rows[r][c] !== rows[r][c + 1])
          return report(rel, false, `column ${rows[0][c + 1]} differs from ${rows[0][c]}`, `row ${r}`);
    checks.push('BYTE_STREAM_SPLIT columns = PLAIN columns');
  }
  if (sp.twin) {
    const t = await tm(['parquet', 'cat', join(root, sp.twin)]);
    const d = await duck(join(root, sp.twin));
    if (d.error) return report(rel, false, `DuckDB cannot read the twin ${sp.twin}`, d.error);
    if (t.out !== d.csv) return report(rel, false, `twin ${sp.twin} differs from DuckDB`, firstDiff(t.out, d.csv));
    if (ours !== d.csv) return report(rel, false, `differs from DuckDB on the twin ${sp.twin}`, firstDiff(ours, d.csv));
    checks.push(`= DuckDB(${sp.twin})`);
  } else if (sp.duckColumns) {
    const r = await tm(['parquet', 'cat', '--columns', sp.duckColumns.join(','), file]);
    const d = await duck(file, sp.duckColumns);
    if (d.error) return report(rel, false, 'DuckDB failed on the chosen columns', d.error);
    if (r.out !== d.csv) return report(rel, false, 'differs from DuckDB', firstDiff(r.out, d.csv));
    checks.push(`${sp.duckColumns.length} columns = DuckDB`);
  } else {
    const d = await duck(file);
    if (d.error) return report(rel, false, 'DuckDB cannot read it and no reference is configured', d.error);
    if (ours !== d.csv) return report(rel, false, 'differs from DuckDB', firstDiff(ours, d.csv));
    checks.push('= DuckDB');
  }
  return report(rel, true, checks.join('; ') + (sp.why ? ` (${sp.why})` : ''));
}

// bad/: an error naming the file and a cause, or a clean read.
const CRC_ONLY = new Set(['bad/parquet-testing/datapage_v1-corrupt-checksum.parquet',
                          'bad/parquet-testing/rle-dict-uncompressed-corrupt-checksum.parquet']);

async function badFile(file) {
  const rel = relative(root, file);
  const r = await tm(['parquet', 'cat', file]);
  if (!noSanitizer(r)) return report(rel, false, 'sanitizer report, signal or timeout', (r.err || String(r.signal)).slice(0, 400));
  if (CRC_ONLY.has(rel)) {
    const v = await tm(['parquet', 'cat', '--verify-crc', file]);
    if (r.code !== 0) return report(rel, false, 'CRC-only corruption must read without --verify-crc', r.err.trim());
    if (v.code === 0 || !v.err.includes('page CRC mismatch') || !v.err.includes(file))
      return report(rel, false, 'expected "page CRC mismatch" with --verify-crc', v.err.trim());
    return report(rel, true, 'reads without CRC checks; --verify-crc: page CRC mismatch');
  }
  if (r.code === 0) {
    const d = await duck(file);
    if (d.error) return report(rel, true, 'clean read (DuckDB fails: ' + d.error.slice(0, 80) + ')');
    if (r.out !== d.csv) return report(rel, false, 'clean read that differs from DuckDB', firstDiff(r.out, d.csv));
    return report(rel, true, 'clean read, = DuckDB');
  }
  const msg = r.err.trim().split('\n')[0];
  if (r.code !== 1) return report(rel, false, `exit code ${r.code}`, msg);
  if (!msg.includes(file)) return report(rel, false, 'error does not name the file', msg);
  const cause = msg.slice(msg.indexOf(file) + file.length).replace(/^[:\s]+/, '');
  if (cause.length < 8) return report(rel, false, 'error gives no cause', msg);
  const nested = /unsupported nested column/.test(msg);
  if (nested) {
    // Also decode the flat columns: the corruption may be there.
    let flat = [];
    try { flat = await flatColumns(file); } catch (e) { /* schema refused: fine */ }
    if (flat.length) {
      const f = await tm(['parquet', 'cat', '--columns', flat.join(','), file]);
      if (!noSanitizer(f)) return report(rel, false, 'sanitizer report on flat columns', f.err.slice(0, 400));
      if (f.code !== 0 && !f.err.includes(file)) return report(rel, false, 'flat-column error does not name the file', f.err.trim());
      const fm = f.code === 0 ? 'flat columns read' : 'flat columns: ' + f.err.trim().split('\n')[0].slice(msg.indexOf(file) + file.length + 2);
      return report(rel, true, `error: ${cause}; ${fm}`);
    }
  }
  return report(rel, true, `error: ${cause}`);
}

if (mode === 'corpus') {
  const files = [
    ...listParquet(root, false),
    ...['impala', 'hyparquet', 'iceberg-encodings', 'arrow-testing'].flatMap((d) => listParquet(join(root, d), true)),
  ];
  for (const f of files) await corpusFile(f);
  // DuckDB's own writer output (v1 and v2 pages, every codec): the footer
  // fuzz seeds, generated by gen-parquet-fuzz-seeds.mjs.
  const seeds = process.env.TM_SOURCE_DIR && join(process.env.TM_SOURCE_DIR, 'fuzz/corpora/fuzz_parquet_footer');
  if (seeds && existsSync(seeds))
    for (const f of listParquet(seeds, false).filter((p) => /\/duckdb-[^/]*$/.test(p))) await corpusFile(f);
  // Larger files than the corpus holds: several row groups (two of 110592 rows,
  // DuckDB's rounding of 110000 to whole vectors, and a short last one), each
  // cut into several batches (65536 rows) and several pages (100K values),
  // dictionary and plain strings, nulls, v1 and v2 pages (DuckDB's V2 writes
  // the DELTA encodings). No larger: every boundary is crossed already.
  const tmp = mkdtempSync(join(tmpdir(), 'tm-pqgen-'));
  try {
    const sql = `SELECT i AS id, CASE WHEN i % 17 = 0 THEN NULL ELSE i * 7 - 500000 END AS n,
                   CASE WHEN i % 13 = 0 THEN NULL ELSE (['alpha','beta','gamma','delta','epsilon'])[(i % 5)::INTEGER + 1] END AS kind,
                   CASE WHEN i % 11 = 0 THEN NULL ELSE md5(i::VARCHAR) || repeat('x', (i % 40)::INTEGER) END AS payload,
                   i / 3.0 AS d, (i % 1000)::FLOAT / 8 AS f, DATE '1960-01-01' + (i % 30000)::INTEGER AS day,
                   TIMESTAMP '1969-12-31 23:00:00' + to_microseconds(i * 1001) AS ts, i % 3 = 0 AS b,
                   (i * 1.25)::DECIMAL(18,2) AS dec FROM range(225000) t(i)`;
    for (const v of ['V1', 'V2']) {
      const f = join(tmp, `generated-${v}.parquet`);
      await con.run(`COPY (${sql}) TO '${f}' (FORMAT parquet, COMPRESSION snappy, PARQUET_VERSION ${v}, ROW_GROUP_SIZE 110000)`);
      await corpusFile(f);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  for (const rel of Object.keys(SPECIAL))
    if (!existsSync(join(root, rel))) report(rel, false, 'special case for a file that does not exist');
} else {
  const files = [...listAll(join(root, 'bad')), ...listAll(join(root, 'encrypted'))];
  for (const f of files) await badFile(f);
}

// The batch answers as the real binary: a clean read, an error, a read with options.
const probes = mode === 'corpus'
  ? [['parquet', 'cat', join(root, 'alltypes_plain.parquet')],
     ['parquet', 'cat', join(root, 'int96_from_spark.parquet')],
     ['parquet', 'schema', '--format', 'csv', join(root, 'alltypes_plain.parquet')],
     ['parquet', 'cat', '--columns', 'id,bool_col', '--limit', '3', join(root, 'alltypes_plain.parquet')]]
  : listAll(join(root, 'bad')).slice(0, 4).map((f) => ['parquet', 'cat', f]);
for (const args of probes) {
  const diff = await sameAsBinary(args);
  report(`batch = binary: ${args.slice(1).join(' ').replace(root + '/', '')}`, !diff, diff || 'same exit code, output and message');
}
if (!(await endBatch())) failures++;
if (batchFailures) console.log(`(${batchFailures} batch process(es) stopped on a file and were restarted)`);
rmSync(batchDir, { recursive: true, force: true });

if (markdown) {
  console.log('\n| file | result |\n|---|---|');
  for (const r of results) console.log(`| ${r.rel} | ${r.ok ? '' : 'FAIL: '}${r.how.replace(/\|/g, '\\|')} |`);
}
console.log(`\n${results.length} files, ${failures} failed`);
process.exit(failures ? 1 : 0);
