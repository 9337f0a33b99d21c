// Checks of Iceberg tables with nested columns that `tidemark iceberg` wrote
// (issue 16), against independent readers: DuckDB (the source Parquet file,
// the data files' Parquet schemas) and icebird (the table).
// Usage:
//   node iceberg-nested-check.mjs values ROWS_JSON SOURCE.parquet
//     ROWS_JSON (a JSON array of objects, e.g. `tidemark iceberg cat --format
//     json` or `tidemark sql --format json`) equals DuckDB's reading of the
//     source file, every value of every row (rows matched by "id").
//   node iceberg-nested-check.mjs ids METADATA_JSON DATA.parquet...
//     Every data file's Parquet schema (DuckDB's parquet_schema()) carries the
//     field id of the table's current schema on every element Iceberg ids:
//     struct fields, list elements, map keys and values; the repeated groups
//     between (a list's "list", a map's "key_value") carry none.
//   node iceberg-nested-check.mjs icebird TABLE_DIR SOURCE.parquet [SKIP_COLUMNS]
//     icebird's reading of the table equals DuckDB's reading of the source
//     file; SKIP_COLUMNS (comma-separated) are columns left out of the check.
//   node iceberg-nested-check.mjs metrics TABLE_DIR
//     The metrics of every live data file (manifests read by icebird) against
//     DuckDB's parquet_metadata() of the file, keyed by the leaves' field ids:
//     every primitive leaf has its column size; a leaf reached through
//     structs only has its value count, null count and (long, int and
//     string leaves are decoded) bounds equal to the Parquet statistics; a
//     leaf inside a list or map and a struct, list or map id have none.
//   node iceberg-nested-check.mjs partitions FILES_JSON SOURCE.parquet N
//     For a table partitioned by (payload.region identity, bucket[N](payload.id)):
//     each data file of FILES_JSON (`tidemark iceberg files --format json`)
//     holds only rows of its partition (values read by DuckDB from the file,
//     the bucket computed here with Murmur3 x86_32 per the Iceberg spec and
//     checked first against the spec's known answers), and the partitions
//     are exactly those of the source file's rows.
// Exit 0 when the check holds; else 1 with the differences on stderr.
import fs from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';

const [cmd, ...args] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await db.connect();
const sqlStr = (s) => `'${String(s).replace(/'/g, "''")}'`;
const die = (msg) => {
  console.error(msg);
  process.exit(1);
};

async function rows(sql) {
  return (await con.runAndReadAll(sql)).getRowObjects();
}

// The source file's rows as JSON values (DuckDB's to_json), ordered by id.
async function sourceRows(file) {
  const r = await rows(`SELECT to_json(t)::VARCHAR AS j FROM read_parquet(${sqlStr(file)}) t ORDER BY id`);
  return r.map((x) => JSON.parse(String(x.j)));
}

// Deep equality; numbers by value (64-bit integers may arrive as strings),
// Map objects and {key, value} entry lists as plain objects.
function canon(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), canon(x)]));
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  if (Array.isArray(v)) return v.map(canon);
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, canon(x)]));
  if (typeof v === 'string' && /^-?\d+$/.test(v) && Math.abs(Number(v)) < 2 ** 53) return Number(v);
  return v;
}

let leaves = 0; // values compared below the rows' columns (nulls, numbers, strings)
function same(a, b, path, diffs) {
  a = canon(a);
  b = canon(b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') leaves++;
  if (a === null || b === null) {
    if (a !== b) diffs.push(`${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    return;
  }
  if (typeof a === 'number' && typeof b === 'number') {
    if (!(a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b))))
      diffs.push(`${path}: ${a} vs ${b}`);
    return;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) {
      diffs.push(`${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      return;
    }
    a.forEach((x, i) => same(x, b[i], `${path}[${i}]`, diffs));
    return;
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    if (ka.join('\u0000') !== kb.join('\u0000')) {
      diffs.push(`${path}: keys ${ka} vs ${kb}`);
      return;
    }
    for (const k of ka) same(a[k], b[k], `${path}.${k}`, diffs);
    return;
  }
  if (a !== b) diffs.push(`${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
}

function compareRows(got, want, what, skip = []) {
  const byId = (r) => [...r].sort((x, y) => Number(canon(x.id)) - Number(canon(y.id)));
  got = byId(got);
  want = byId(want);
  if (got.length !== want.length) die(`${what}: ${got.length} rows, want ${want.length}`);
  const diffs = [];
  leaves = 0;
  got.forEach((r, i) => {
    const w = { ...want[i] }, g = { ...r };
    for (const c of skip) {
      delete w[c];
      delete g[c];
    }
    same(g, w, `row id=${canon(want[i].id)}`, diffs);
  });
  if (diffs.length) die(`${what}: ${diffs.length} differences:\n  ${diffs.slice(0, 20).join('\n  ')}`);
  console.log(`${what}: ${got.length} rows equal (${leaves} leaf values, nulls included)`);
}

// ---- ids ----------------------------------------------------------------------

// The Parquet schema elements Iceberg expects below a field, as
// [name or null (any name), field id or null (none), repetition or null].
function expectType(t, out) {
  if (typeof t === 'string') return;
  if (t.type === 'struct') {
    for (const f of t.fields) {
      out.push([f.name, f.id, f.required ? 'REQUIRED' : 'OPTIONAL']);
      expectType(f.type, out);
    }
  } else if (t.type === 'list') {
    out.push([null, null, 'REPEATED']);
    out.push(['element', t['element-id'], t['element-required'] ? 'REQUIRED' : 'OPTIONAL']);
    expectType(t.element, out);
  } else if (t.type === 'map') {
    out.push([null, null, 'REPEATED']);
    out.push(['key', t['key-id'], 'REQUIRED']);
    expectType(t.key, out);
    out.push(['value', t['value-id'], t['value-required'] ? 'REQUIRED' : 'OPTIONAL']);
    expectType(t.value, out);
  } else {
    die(`unknown Iceberg type ${JSON.stringify(t)}`);
  }
}

async function checkIds(metaFile, files) {
  const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8'));
  const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
  const want = [];
  expectType(schema, want);
  const ids = want.filter((w) => w[1] !== null).map((w) => w[1]);
  if (new Set(ids).size !== ids.length) die(`${metaFile}: field ids are not unique: ${ids}`);
  if (Math.max(...ids) !== meta['last-column-id'])
    die(`${metaFile}: last-column-id ${meta['last-column-id']}, highest field id ${Math.max(...ids)}`);
  if (files.length === 0) die('ids: no data files');
  let checked = 0;
  for (const f of files) {
    const got = await rows(`SELECT name, field_id, repetition_type FROM parquet_schema(${sqlStr(f)})`);
    got.shift(); // the root
    if (got.length !== want.length) die(`${f}: ${got.length} schema elements, the table implies ${want.length}`);
    want.forEach(([name, id, rep], i) => {
      const g = got[i];
      const gid = g.field_id === null ? null : Number(g.field_id);
      if ((name !== null && g.name !== name) || gid !== id || g.repetition_type !== rep)
        die(`${f}: element ${i}: ${g.name} id ${gid} ${g.repetition_type}, want ${name ?? '(any)'} id ${id} ${rep}`);
      if (id !== null) checked++;
    });
  }
  console.log(`ids: ${files.length} data files, ${checked} field ids equal to the metadata's (${ids.length} per file)`);
}

// ---- bucket (Iceberg spec: Murmur3 x86_32, seed 0) ----------------------------

function murmur3(bytes) {
  const c1 = 0xcc9e2d51, c2 = 0x1b873593;
  const n = bytes.length, nb = n & ~3;
  let h = 0;
  const mixK = (k) => {
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    return Math.imul(k, c2);
  };
  for (let i = 0; i < nb; i += 4) {
    h ^= mixK(bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  const rest = n & 3;
  if (rest === 3) k ^= bytes[nb + 2] << 16;
  if (rest >= 2) k ^= bytes[nb + 1] << 8;
  if (rest >= 1) {
    k ^= bytes[nb];
    h ^= mixK(k);
  }
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}
const longBytes = (v) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(v));
  return b;
};
const bucketLong = (v, n) => (murmur3(longBytes(v)) & 0x7fffffff) % n;
// The spec's known answers ("Appendix B: 32-bit Hash Requirements").
if (murmur3(longBytes(34)) !== 2017239379) die('murmur3: long 34 does not hash to 2017239379');
if (murmur3(Buffer.from('iceberg', 'utf8')) !== 1210000089) die('murmur3: "iceberg" does not hash to 1210000089');

async function checkPartitions(filesJson, source, n) {
  const files = JSON.parse(fs.readFileSync(filesJson, 'utf8')).filter((f) => f.content === 'data');
  const key = (region, bucket) => `${region ?? 'null'}|${bucket ?? 'null'}`;
  const want = new Set();
  for (const r of await rows(`SELECT payload.region AS region, payload.id AS id FROM read_parquet(${sqlStr(source)})`))
    want.add(key(r.region, r.id === null ? null : bucketLong(r.id, n)));
  const seen = new Set();
  let total = 0;
  for (const f of files) {
    // "payload_region=eu, payload_id_bucket=3"
    const part = Object.fromEntries(f.partition.split(', ').map((kv) => kv.split('=')));
    const region = part.payload_region === 'null' ? null : part.payload_region;
    const bucket = part.payload_id_bucket === 'null' ? null : Number(part.payload_id_bucket);
    if (!('payload_region' in part) || !('payload_id_bucket' in part)) die(`${f.path}: partition ${f.partition}`);
    const path = fileURLToPath(f.path);
    for (const r of await rows(`SELECT payload.region AS region, payload.id AS id FROM read_parquet(${sqlStr(path)})`)) {
      const b = r.id === null ? null : bucketLong(r.id, n);
      if (r.region !== region || b !== bucket)
        die(`${f.path} (${f.partition}) holds a row of region ${r.region}, payload.id ${r.id} (bucket ${b})`);
      total++;
    }
    seen.add(key(region, bucket));
  }
  const missing = [...want].filter((k) => !seen.has(k)), extra = [...seen].filter((k) => !want.has(k));
  if (missing.length || extra.length) die(`partitions: missing ${missing}, unexpected ${extra}`);
  console.log(`partitions: ${files.length} data files, ${total} rows, ${seen.size} partitions as computed from the source`);
}

// ---- icebird -------------------------------------------------------------------

function fileFetch() {
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    if (!url.startsWith('file:')) return realFetch(input, init);
    const path = fileURLToPath(url);
    if (!fs.existsSync(path)) return new Response('not found', { status: 404, statusText: 'Not Found' });
    const data = fs.readFileSync(path);
    const range = new Headers(init.headers || {}).get('range');
    if (init.method === 'HEAD')
      return new Response(null, { status: 200, headers: { 'Content-Length': String(data.length) } });
    if (range) {
      const m = /bytes=(\d+)-(\d*)/.exec(range);
      const start = Number(m[1]), end = m[2] ? Number(m[2]) + 1 : data.length;
      const part = data.subarray(start, end);
      return new Response(part, {
        status: 206,
        headers: { 'Content-Length': String(part.length), 'Content-Range': `bytes ${start}-${end - 1}/${data.length}` },
      });
    }
    return new Response(data, { status: 200, headers: { 'Content-Length': String(data.length) } });
  };
}

async function icebirdRows(dir) {
  fileFetch();
  const { icebergRead } = await import('icebird');
  return icebergRead({ tableUrl: pathToFileURL(fs.realpathSync(dir)).href });
}

// The leaves of an Iceberg type, depth first (Parquet leaf order), with
// whether they sit inside a list or a map; the ids of the other members.
function leavesOf(t, repeated, leaves, inner, id) {
  if (typeof t === 'string') {
    leaves.push({ id, type: t, repeated });
    return;
  }
  if (id !== null) inner.add(id);
  if (t.type === 'struct') for (const f of t.fields) leavesOf(f.type, repeated, leaves, inner, f.id);
  else if (t.type === 'list') leavesOf(t.element, true, leaves, inner, t['element-id']);
  else {
    leavesOf(t.key, true, leaves, inner, t['key-id']);
    leavesOf(t.value, true, leaves, inner, t['value-id']);
  }
}

const mapOf = (m) => {
  const out = new Map();
  if (!m) return out;
  if (Array.isArray(m)) for (const e of m) out.set(Number(e.key), e.value);
  else for (const [k, v] of Object.entries(m)) out.set(Number(k), v);
  return out;
};
const bytesOf = (v) => (typeof v === 'string' ? Buffer.from(v, 'latin1') : Buffer.from(v));

async function checkMetrics(dir) {
  fileFetch();
  const { icebergMetadata, icebergManifests } = await import('icebird');
  const tableUrl = pathToFileURL(fs.realpathSync(dir)).href;
  const meta = await icebergMetadata({ tableUrl });
  const schema = meta.schemas.find((x) => x['schema-id'] === meta['current-schema-id']);
  const leaves = [], inner = new Set();
  leavesOf(schema, false, leaves, inner, null);
  let files = 0, checked = 0;
  for (const { entries } of await icebergManifests(meta)) {
    for (const e of entries) {
      if (e.status === 2 || e.data_file.content !== 0) continue;
      files++;
      const df = e.data_file;
      const sizes = mapOf(df.column_sizes), counts = mapOf(df.value_counts), nulls = mapOf(df.null_value_counts);
      const lower = mapOf(df.lower_bounds), upper = mapOf(df.upper_bounds);
      const path = fileURLToPath(df.file_path);
      const md = await rows(`SELECT column_id, sum(num_values) AS n, sum(stats_null_count) AS nulls,
          min(stats_min_value) AS lo, max(stats_max_value) AS hi, sum(total_compressed_size) AS size
        FROM parquet_metadata(${sqlStr(path)}) GROUP BY column_id ORDER BY column_id`);
      if (md.length !== leaves.length) die(`${path}: ${md.length} leaf columns, the schema has ${leaves.length}`);
      for (const id of inner)
        for (const [what, m] of [['column_sizes', sizes], ['value_counts', counts], ['null_value_counts', nulls], ['lower_bounds', lower]])
          if (m.has(id)) die(`${path}: ${what} has the non-leaf id ${id}`);
      leaves.forEach((l, k) => {
        const pq = md[k];
        const where = `${path}: leaf ${l.id} (${l.type}${l.repeated ? ', in a list or map' : ''})`;
        if (Number(sizes.get(l.id)) !== Number(pq.size)) die(`${where}: column size ${sizes.get(l.id)}, Parquet ${pq.size}`);
        if (l.repeated) {
          if (counts.has(l.id) || nulls.has(l.id) || lower.has(l.id) || upper.has(l.id))
            die(`${where}: counts or bounds for a leaf inside a list or map`);
          checked++;
          return;
        }
        if (Number(counts.get(l.id)) !== Number(pq.n) || Number(counts.get(l.id)) !== Number(df.record_count))
          die(`${where}: value count ${counts.get(l.id)}, Parquet ${pq.n}, rows ${df.record_count}`);
        if (Number(nulls.get(l.id)) !== Number(pq.nulls)) die(`${where}: null count ${nulls.get(l.id)}, Parquet ${pq.nulls}`);
        const allNull = Number(pq.nulls) === Number(pq.n);
        if (lower.has(l.id) === allNull || upper.has(l.id) === allNull) die(`${where}: bounds present: ${lower.has(l.id)}, all null: ${allNull}`);
        if (!allNull && (l.type === 'long' || l.type === 'int' || l.type === 'string')) {
          const dec = (v) => {
            const b = bytesOf(v);
            return l.type === 'long' ? b.readBigInt64LE(0).toString() : l.type === 'int' ? String(b.readInt32LE(0)) : b.toString('utf8');
          };
          if (dec(lower.get(l.id)) !== String(pq.lo) || dec(upper.get(l.id)) !== String(pq.hi))
            die(`${where}: bounds ${dec(lower.get(l.id))}..${dec(upper.get(l.id))}, Parquet ${pq.lo}..${pq.hi}`);
        }
        checked++;
      });
    }
  }
  if (files === 0) die('metrics: no data files');
  console.log(`metrics: ${files} data files, ${checked} leaf metrics equal to the Parquet statistics`);
}

if (cmd === 'values') {
  const [rowsFile, source] = args;
  compareRows(JSON.parse(fs.readFileSync(rowsFile, 'utf8')), await sourceRows(source), 'values');
} else if (cmd === 'ids') {
  await checkIds(args[0], args.slice(1));
} else if (cmd === 'icebird') {
  const [dir, source, skip] = args;
  let got;
  try {
    got = await icebirdRows(dir);
  } catch (e) {
    die(`icebird cannot read ${dir}: ${e.message || e}`);
  }
  compareRows(got, await sourceRows(source), 'icebird', skip ? skip.split(',') : []);
} else if (cmd === 'metrics') {
  await checkMetrics(args[0]);
} else if (cmd === 'partitions') {
  await checkPartitions(args[0], args[1], Number(args[2]));
} else {
  die('usage: iceberg-nested-check.mjs values|ids|icebird|metrics|partitions ...');
}
