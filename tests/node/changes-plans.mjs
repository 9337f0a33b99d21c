// changes-plans.mjs - the plan-driven differential test of issue 19 (SPEC E2,
// E3, E5): seeded plans of mixed Iceberg operations authored with
// `tidemark iceberg`, a `tidemark refresh` after every snapshot (or every k-th),
// and the acceleration compared, as a multiset of rows, with an independent
// reading of the table at that snapshot.
//
// Which reader is the truth for what:
//  - Snapshots whose live delete files are Parquet (v2 tables, and v3 tables
//    before their first deletion vector): icebird 0.3.1 (`icebergRead`), an
//    independent JavaScript Iceberg reader. It applies position deletes and
//    equality deletes (by data sequence number), but not deletion vectors.
//  - Snapshots with deletion vectors (v3): the spec reader below. Manifests
//    are decoded by icebird (`icebergManifests`), Parquet data and delete
//    files by hyparquet (icebird's Parquet reader), each vector by
//    tests/node/puffin-check.mjs (written from the Puffin and Roaring specs),
//    and deletes applied as the Iceberg spec says (position deletes and
//    vectors by file and position; an equality delete only to data files of
//    a lower data sequence number, in its partition unless it is
//    unpartitioned). Where icebird can read a snapshot, the spec reader must
//    agree with it (checked at every compared snapshot).
//  - Both are checked against the plan's own model (the rows each operation
//    meant to leave): a disagreement there is a failure of the authoring or
//    of the reader, reported apart from acceleration mismatches.
//
// `node changes-plans.mjs --read-truth TABLE` prints the current snapshot's
// rows (id|k|v, sorted) as read by the truth above, for the kill test.
// Usage: node changes-plans.mjs --bin TIDEMARK --dir WORK [--seed N]
//   [--plans N] [--snapshots N] [--every K] [--mode full|changes|append]
//   [--engine default|duckdb|arrow|sqlite|cycle] [--engines a,b,...]
//   [--first-plan N] [--expect-drift] [--cli] [--verbose]
// Exit 0: every compared snapshot matched (with --expect-drift: the truth
// checks passed and at least one acceleration mismatch was detected).
// Exit 1: a mismatch (each printed with seed, plan, step and operation).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { icebergRead, icebergMetadata, icebergManifests } from 'icebird';
import { parquetReadObjects, asyncBufferFromFile } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const flag = (name) => args.includes(`--${name}`);
const BIN = opt('bin');
const WORK = opt('dir');
const READ_TRUTH = opt('read-truth');
if (!READ_TRUTH && (!BIN || !WORK)) {
  console.error('usage: changes-plans.mjs --bin TIDEMARK --dir WORK [options]');
  process.exit(2);
}
const SEED = Number(opt('seed', '1'));
const PLANS = Number(opt('plans', '3'));
const FIRST = Number(opt('first-plan', '0'));
const SNAPS = Number(opt('snapshots', '20'));
const EVERY = Number(opt('every', '1'));
const MODE = opt('mode', 'changes');
const ENGINE = opt('engine', 'default');
const EXPECT_DRIFT = flag('expect-drift');
const VERBOSE = flag('verbose');
// --cli: refresh with `tidemark refresh` and query with `tidemark sql` (a
// process each); default: one `tidemark run` per plan, refreshes triggered
// by POST /v1/datasets/t/acceleration/refresh and rows read by POST /v1/sql.
const CLI = flag('cli');

// file:// fetch for icebird (it reads over fetch()), with byte ranges.
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input.url;
  if (!url.startsWith('file:')) return realFetch(input, init);
  const p = fileURLToPath(url);
  if (!fs.existsSync(p)) return new Response('not found', { status: 404, statusText: 'Not Found' });
  const data = fs.readFileSync(p);
  const headers = new Headers(init.headers || {});
  const range = headers.get('range');
  if (init.method === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'Content-Length': String(data.length) } });
  }
  if (range) {
    const m = /bytes=(\d+)-(\d*)/.exec(range);
    const start = Number(m[1]);
    const end = m[2] ? Number(m[2]) + 1 : data.length;
    const part = data.subarray(start, end);
    return new Response(part, {
      status: 206,
      headers: { 'Content-Length': String(part.length), 'Content-Range': `bytes ${start}-${end - 1}/${data.length}` },
    });
  }
  return new Response(data, { status: 200, headers: { 'Content-Length': String(data.length) } });
};

// ---- seeded choices (mulberry32) ----------------------------------------------------
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    sample: (xs, n) => {
      const c = xs.slice();
      const out = [];
      while (out.length < n && c.length) out.push(c.splice(Math.floor(next() * c.length), 1)[0]);
      return out;
    },
  };
}

// ---- running tidemark ----------------------------------------------------------------
function tm(argv, cwd) {
  try {
    return execFileSync(BIN, argv, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  } catch (e) {
    throw new Error(`tidemark ${argv.join(' ')}: exit ${e.status}: ${(e.stderr || '').trim()}`);
  }
}
const rowKey = (r) => `${r.id}|${r.k}|${r.v}`;

// ---- the server (tidemark run) ------------------------------------------------------
async function startServer(cwd) {
  const log = path.join(cwd, 'server.log');
  const fd = fs.openSync(log, 'w');
  const child = spawn(BIN, ['run', '-c', 'tm.yaml', '--http', '127.0.0.1:0', '--metrics', 'off'], {
    cwd, stdio: ['ignore', 'ignore', fd], env: { ...process.env, TIDEMARK_LOG: 'info' },
  });
  fs.closeSync(fd);
  let exited = null;
  child.on('exit', (code, sig) => { exited = `exit ${code ?? sig}`; });
  for (let i = 0; i < 600; i++) {
    const m = /HTTP API listening on [^ ]*:(\d+)\r?\n/.exec(fs.readFileSync(log, 'utf8'));
    if (m) return { child, base: `http://127.0.0.1:${m[1]}`, log };
    if (exited) throw new Error(`tidemark run: ${exited}: ${fs.readFileSync(log, 'utf8').slice(-2000)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
  child.kill('SIGKILL');
  throw new Error('tidemark run did not listen within 30 s');
}
async function stopServer(srv) {
  const done = new Promise((res) => srv.child.on('exit', (code, sig) => res(code ?? sig)));
  srv.child.kill('SIGTERM');
  const code = await done;
  const log = fs.readFileSync(srv.log, 'utf8');
  if (/AddressSanitizer|runtime error:|LeakSanitizer/.test(log)) throw new Error(`tidemark run: sanitizer report in ${srv.log}`);
  if (code !== 0) throw new Error(`tidemark run exited with ${code}`);
}
// The server closes idle keep-alive connections (10 s, docs/HTTP_API.md);
// fetch may pick such a socket just as it closes: retry on a socket error.
async function http(url, init) {
  for (let i = 0; ; i++) {
    try {
      return await realFetch(url, init);
    } catch (e) {
      if (i >= 3 || !(e.cause && /UND_ERR_SOCKET|ECONNRESET/.test(e.cause.code || ''))) throw e;
    }
  }
}
async function accelState(srv) {
  const r = await http(`${srv.base}/v1/datasets/t/acceleration`);
  const body = await r.text();
  if (!r.ok) throw new Error(`GET acceleration: ${r.status} ${body}`);
  const st = JSON.parse(body);
  // snapshot ids are 64-bit: keep their digits, not a double's
  const m = /"saved_snapshot_id":\s*(-?\d+)/.exec(body);
  if (m) st.saved_snapshot_id = m[1];
  return st;
}
// Waits until the dataset is ready, then triggers a refresh and waits for it.
async function serverRefresh(srv) {
  let st = await accelState(srv);
  for (let i = 0; st.status !== 'Ready' && st.status !== 'Error' && i < 1200; i++) {
    await new Promise((res) => setTimeout(res, 25));
    st = await accelState(srv);
  }
  const before = st.last_refresh ? st.last_refresh.started_at : null;
  const r = await http(`${srv.base}/v1/datasets/t/acceleration/refresh`, { method: 'POST' });
  if (r.status !== 201) throw new Error(`POST refresh: ${r.status} ${await r.text()}`);
  for (let i = 0; i < 4800; i++) {
    await new Promise((res) => setTimeout(res, 25));
    st = await accelState(srv);
    const started = st.last_refresh ? st.last_refresh.started_at : null;
    if (st.last_error && st.status === 'Error') throw new Error(`refresh failed: ${JSON.stringify(st.last_error)}`);
    if (started !== before && st.status !== 'Refreshing') {
      const lr = st.last_refresh;
      return `t: ${lr.mode} refresh read ${lr.read}, ${lr.rows_written} rows written, ${st.rows} rows, saved snapshot ${st.saved_snapshot_id}${lr.fallback_reason ? `, fallback ${lr.fallback_reason}` : ''}`;
    }
  }
  throw new Error('the refresh did not finish within 120 s');
}
async function serverRows(srv) {
  const r = await http(`${srv.base}/v1/sql`, { method: 'POST', body: 'SELECT id, k, v FROM t', headers: { 'Content-Type': 'text/plain', Accept: 'text/csv' } });
  const body = await r.text();
  if (!r.ok) throw new Error(`POST /v1/sql: ${r.status} ${body}`);
  const lines = body.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.length);
  lines.shift();
  return lines.map((l) => l.split(',').join('|'));
}

function accelerationRows(cwd) {
  const out = tm(['sql', '-c', 'tm.yaml', '--format', 'csv', 'SELECT id, k, v FROM t'], cwd);
  const lines = out.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.length);
  lines.shift(); // header
  return lines.map((l) => l.split(',').join('|'));
}

// ---- independent readers -------------------------------------------------------------
function currentMetadataFile(table) {
  const v = fs.readFileSync(path.join(table, 'metadata', 'version-hint.text'), 'utf8').trim();
  return `v${v}.metadata.json`;
}

const text = (v) => (typeof v === 'bigint' ? v.toString() : v === null || v === undefined ? null : String(v));

async function icebirdRows(table, metadataFileName) {
  const tableUrl = pathToFileURL(fs.realpathSync(table)).href;
  try {
    const rows = await icebergRead({ tableUrl, metadataFileName });
    return rows.map((r) => `${text(r.id)}|${text(r.k)}|${text(r.v)}`);
  } catch (e) {
    // icebird refuses a snapshot without data files; that table is empty.
    if (/No data manifest files/.test(e.message)) return [];
    throw e;
  }
}

const puffinCache = new Map();
function puffinBlobs(file) {
  if (!puffinCache.has(file)) {
    const out = execFileSync(process.execPath, [path.join(here, 'puffin-check.mjs'), file], { encoding: 'utf8', maxBuffer: 1 << 28 });
    puffinCache.set(file, out.split('\n').filter((l) => l).map((l) => JSON.parse(l)));
  }
  return puffinCache.get(file);
}

async function parquetRows(file) {
  const buf = await asyncBufferFromFile(file);
  return parquetReadObjects({ file: buf, compressors });
}

const localPath = (p) => (p.startsWith('file:') ? fileURLToPath(p) : p);
const partKey = (df) => `${df.spec_id ?? 0}:${JSON.stringify(df.partition ?? {}, (_, v) => (typeof v === 'bigint' ? v.toString() : v))}`;

// Reads the current snapshot of metadata file m from the spec (see the header).
async function specRows(table, metadataFileName) {
  const tableUrl = pathToFileURL(fs.realpathSync(table)).href;
  const metadata = await icebergMetadata({ tableUrl, metadataFileName });
  const cur = metadata['current-snapshot-id'];
  if (cur === undefined || cur === null || Number(cur) === -1) return { rows: [], dvs: 0 };
  const manifests = await icebergManifests(metadata);
  const data = [];
  const deletes = [];
  for (const { entries } of manifests) {
    for (const e of entries) {
      if (e.status === 2) continue;
      (e.data_file.content ? deletes : data).push(e);
    }
  }
  const specs = new Map((metadata['partition-specs'] || []).map((s) => [s['spec-id'], s]));
  const unpartitioned = (specId) => !(specs.get(specId)?.fields?.length);
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  const fieldName = new Map(schema.fields.map((f) => [f.id, f.name]));
  const posDeletes = new Map(); // data file path -> Set(pos)
  const eqDeletes = []; // { seq, part, unpart, cols, rows }
  let dvs = 0;
  const addPos = (file, pos) => {
    if (!posDeletes.has(file)) posDeletes.set(file, new Set());
    posDeletes.get(file).add(Number(pos));
  };
  for (const e of deletes) {
    const df = e.data_file;
    if (String(df.file_format).toUpperCase() === 'PUFFIN') {
      dvs++;
      const blob = puffinBlobs(localPath(df.file_path)).find((b) => b.offset === Number(df.content_offset));
      if (!blob) throw new Error(`${df.file_path}: no blob at offset ${df.content_offset}`);
      const ref = blob.properties['referenced-data-file'];
      if (df.referenced_data_file && ref !== df.referenced_data_file) throw new Error(`DV for ${ref}, manifest says ${df.referenced_data_file}`);
      for (const p of blob.positions) addPos(ref, p);
    } else if (df.content === 1) {
      for (const r of await parquetRows(localPath(df.file_path))) addPos(r.file_path, r.pos);
    } else {
      const cols = (df.equality_ids || []).map((id) => fieldName.get(id));
      eqDeletes.push({ seq: BigInt(e.sequence_number), part: partKey(df), unpart: unpartitioned(df.spec_id ?? 0), cols, rows: await parquetRows(localPath(df.file_path)) });
    }
  }
  const rows = [];
  for (const e of data) {
    const df = e.data_file;
    const seq = BigInt(e.sequence_number);
    const pd = posDeletes.get(df.file_path);
    const part = partKey(df);
    const eqs = eqDeletes.filter((d) => d.seq > seq && (d.unpart || d.part === part));
    const keys = eqs.map((d) => new Set(d.rows.map((r) => d.cols.map((c) => text(r[c])).join('\u0000'))));
    const drows = await parquetRows(localPath(df.file_path));
    drows.forEach((r, i) => {
      if (pd && pd.has(i)) return;
      for (let j = 0; j < eqs.length; j++) {
        if (keys[j].has(eqs[j].cols.map((c) => text(r[c])).join('\u0000'))) return;
      }
      rows.push(`${text(r.id)}|${text(r.k)}|${text(r.v)}`);
    });
  }
  return { rows, dvs };
}

// ---- multisets -----------------------------------------------------------------------
function diff(got, want) {
  const count = new Map();
  for (const r of want) count.set(r, (count.get(r) || 0) + 1);
  for (const r of got) count.set(r, (count.get(r) || 0) - 1);
  const missing = [];
  const extra = [];
  for (const [r, c] of count) {
    for (let i = 0; i < c; i++) missing.push(r);
    for (let i = 0; i < -c; i++) extra.push(r);
  }
  return { equal: missing.length === 0 && extra.length === 0, missing, extra };
}
const show = (d) => `${d.missing.length} missing (e.g. ${d.missing.slice(0, 3).join(' ')}), ${d.extra.length} extra (e.g. ${d.extra.slice(0, 3).join(' ')})`;

// ---- a plan --------------------------------------------------------------------------
// --engine cycle: plan p uses ENGINES[p % n] (--engines a,b,... sets the list).
const ENGINES = opt('engines', 'default,duckdb,arrow,sqlite').split(',');
const ENGINE_CONFIG = { default: [], duckdb: ['engine: duckdb', 'mode: file'], arrow: ['engine: arrow'], sqlite: ['engine: sqlite', 'mode: file'] };
const SCHEMA = '[{"name":"id","type":"long","required":true},{"name":"k","type":"long","required":true},{"name":"v","type":"string","required":true},{"name":"ts","type":"timestamptz","required":true}]';
// ts follows id (one second each), so that an append refresh has a time column.
const tsOf = (id) => new Date(Date.UTC(2026, 0, 1) + id * 1000).toISOString();

async function runPlan(p) {
  const r = rng(SEED * 1000003 + p);
  const dir = path.join(WORK, `plan${p}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const table = path.join(dir, 'wh', 't');
  const v3 = p % 2 === 1;
  const partitioned = p % 4 >= 2;
  const engine = ENGINE === 'cycle' ? ENGINES[p % ENGINES.length] : ENGINE;
  if (!ENGINE_CONFIG[engine]) throw new Error(`unknown engine ${engine}`);
  const accel = [`refresh_mode: ${MODE}`, ...ENGINE_CONFIG[engine]];
  if (!CLI) accel.push('refresh_check_interval: 1h');
  // append needs a time column (A1); the other modes do not use it
  const timeCol = MODE === 'append' ? '    time_column: ts\n' : '';
  fs.writeFileSync(path.join(dir, 'tm.yaml'), `datasets:\n  - from: iceberg:file://wh/t\n    name: t\n${timeCol}    acceleration: {${accel.join(', ')}}\n`);
  const create = ['iceberg', 'create', 'wh/t', '--schema', SCHEMA];
  if (v3) create.push('--format-version', '3');
  if (partitioned) create.push('--partition', 'bucket[4](id)');
  tm(create, dir);
  const label = `seed ${SEED} plan ${p} (${v3 ? 'v3' : 'v2'}${partitioned ? ', bucket[4](id)' : ''}, engine ${engine}, mode ${MODE}, every ${EVERY})`;

  let model = []; // rows {id, k, v}
  let nextId = 1;
  let csvN = 0;
  const models = new Map(); // snapshot id -> rows
  let chain = []; // snapshot ids from the oldest live ancestor to the current
  const batches = []; // [lo, hi) id ranges of appends
  const stats = { compared: 0, matched: 0, mismatched: 0, truthFailures: 0, refused: 0, ops: {}, fallbacks: {} };

  const writeCsv = (rows) => {
    const f = path.join(dir, `in${csvN++}.csv`);
    fs.writeFileSync(f, 'id,k,v,ts\n' + rows.map((x) => `${x.id},${x.k},${x.v},${tsOf(x.id)}`).join('\n') + '\n');
    return f;
  };
  const newRows = (n, step) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const id = nextId++;
      out.push({ id, k: r.int(0, 19), v: `v${id}s${step}` });
    }
    return out;
  };
  const committed = (out) => {
    const m = /committed snapshot (-?\d+)/.exec(out);
    if (!m) throw new Error(`no snapshot committed: ${out.trim()}`);
    return m[1];
  };
  const idList = (ids) => `id IN (${ids.join(', ')})`;

  let srv = null;
  try {
  // Every plan covers each kind: these go first (shuffled; compaction sits
  // between deletes and deletes follow it), then random choices by weight.
  const cover = r.sample(['posdel', 'eqdel', 'cowdel', 'delfile', 'overwrite', 'upsert', 'compact', 'posdel', 'upsert', 'eqdel'], 10);
  cover.splice(r.int(3, 8), 0, 'rollback');
  cover.push('expire');
  for (let step = 1; step <= SNAPS; step++) {
    let op;
    const live = model.length;
    const ok = (o) => (['posdel', 'eqdel', 'cowdel', 'overwrite'].includes(o) ? live > 0 : o === 'rollback' ? chain.length > 2 : o === 'delfile' ? batches.length > 0 : true);
    if (step === 1) op = 'append';
    else if (cover.length && step <= SNAPS - 2 && ok(cover[0])) op = cover.shift();
    else {
      const choices = [
        ['append', 4], ['posdel', live ? 3 : 0], ['eqdel', live ? 2 : 0], ['cowdel', live ? 1 : 0],
        ['delfile', batches.length ? 1 : 0], ['overwrite', live ? 1 : 0], ['upsert', 3],
        ['compact', 1], ['rollback', chain.length > 2 ? 1 : 0], ['expire', step > 6 ? 0.5 : 0],
      ];
      const total = choices.reduce((s, c) => s + c[1], 0);
      let x = r.next() * total;
      op = choices.find((c) => (x -= c[1]) < 0)[0];
    }
    let out = '';
    let snap = null;
    let desc = op;
    if (op === 'append') {
      const rows = newRows(step === 1 ? r.int(60, 120) : r.int(1, 40), step);
      batches.push([rows[0].id, nextId]);
      snap = committed(tm(['iceberg', 'append', 'wh/t', writeCsv(rows)], dir));
      model = model.concat(rows);
      desc = `append ${rows.length}`;
    } else if (op === 'posdel' || op === 'cowdel') {
      const ids = r.sample(model.map((x) => x.id), r.int(1, 6));
      const argv = ['iceberg', 'delete', 'wh/t', '--where', idList(ids)];
      if (op === 'cowdel') argv.push('--copy-on-write');
      snap = committed(tm(argv, dir));
      const gone = new Set(ids);
      model = model.filter((x) => !gone.has(x.id));
      desc = `${op === 'posdel' ? (v3 ? 'delete (deletion vectors)' : 'delete (position)') : 'delete --copy-on-write'} ${ids.length} ids`;
    } else if (op === 'eqdel') {
      const k = r.pick(model).k;
      snap = committed(tm(['iceberg', 'delete', 'wh/t', '--where', `k = ${k}`, '--equality', 'k'], dir));
      model = model.filter((x) => x.k !== k);
      desc = `delete --equality k (k = ${k})`;
    } else if (op === 'delfile') {
      const [lo, hi] = r.pick(batches);
      const where = `id >= ${lo} AND id < ${hi}`;
      const matching = model.filter((x) => x.id >= lo && x.id < hi).length;
      if (matching === 0) {
        // nothing left of that batch: an append instead, so that each step commits
        const rows = newRows(r.int(1, 20), step);
        batches.push([rows[0].id, nextId]);
        snap = committed(tm(['iceberg', 'append', 'wh/t', writeCsv(rows)], dir));
        model = model.concat(rows);
        desc = `append ${rows.length}`;
      } else {
        snap = committed(tm(['iceberg', 'delete', 'wh/t', '--where', where], dir));
        model = model.filter((x) => !(x.id >= lo && x.id < hi));
        desc = `delete of batch [${lo}, ${hi}) (whole files where nothing else is live)`;
      }
    } else if (op === 'overwrite') {
      const k = r.pick(model).k;
      const rows = newRows(r.int(1, 10), step);
      batches.push([rows[0].id, nextId]);
      snap = committed(tm(['iceberg', 'overwrite', 'wh/t', '--where', `k = ${k}`, writeCsv(rows)], dir));
      model = model.filter((x) => x.k !== k).concat(rows);
      desc = `overwrite k = ${k} + ${rows.length} rows`;
    } else if (op === 'upsert') {
      const old = r.sample(model.map((x) => x.id), Math.min(model.length, r.int(1, 6)));
      const rows = old.map((id) => ({ id, k: r.int(0, 19), v: `u${id}s${step}` })).concat(newRows(r.int(old.length ? 0 : 1, 5), step));
      snap = committed(tm(['iceberg', 'upsert', 'wh/t', '--equality', 'id', writeCsv(rows)], dir));
      const ids = new Set(rows.map((x) => x.id));
      model = model.filter((x) => !ids.has(x.id)).concat(rows);
      desc = `upsert ${old.length} keys + ${rows.length - old.length} new (data + equality deletes, one commit)`;
    } else if (op === 'compact') {
      out = tm(['iceberg', 'compact', 'wh/t'], dir);
      const m = /committed snapshot (-?\d+)/.exec(out);
      if (m) snap = m[1];
      desc = m ? 'compact (replace)' : 'compact (nothing to do)';
      if (!m) {
        // already compact: append instead so that the step makes a snapshot
        const rows = newRows(r.int(1, 10), step);
        batches.push([rows[0].id, nextId]);
        snap = committed(tm(['iceberg', 'append', 'wh/t', writeCsv(rows)], dir));
        model = model.concat(rows);
        desc = `append ${rows.length} (compact had nothing to do)`;
      }
    } else if (op === 'rollback') {
      const j = r.int(0, chain.length - 2);
      const to = chain[j];
      tm(['iceberg', 'rollback', 'wh/t', '--to', to], dir);
      chain = chain.slice(0, j + 1);
      model = models.get(to).slice();
      desc = `rollback to step ${chain.length} of the chain (${to})`;
    } else if (op === 'expire') {
      const cutoff = new Date(Date.now() + 2000).toISOString().replace(/\.\d+Z$/, 'Z');
      tm(['iceberg', 'expire', 'wh/t', '--older-than', cutoff], dir);
      chain = chain.slice(-1);
      desc = 'expire every snapshot but the current';
    }
    if (snap) {
      chain.push(snap);
      models.set(snap, model.slice());
    }
    stats.ops[op] = (stats.ops[op] || 0) + 1;

    if (step % EVERY !== 0 && step !== SNAPS) continue;
    // Refresh, then compare the acceleration with the truth at this snapshot.
    let refresh;
    if (CLI) {
      refresh = tm(['refresh', '-c', 'tm.yaml'], dir).trim();
    } else {
      if (!srv) {
        try {
          srv = await startServer(dir);
        } catch (e) {
          // A configuration the runtime refuses (e.g. a mode on an engine
          // that cannot do it) is a finding, reported, not a crash.
          if (!/exit 2: /.test(e.message)) throw e;
          stats.refused++;
          console.log(`REFUSED ${label}: ${e.message.split('\n')[0]}`);
          break;
        }
      }
      refresh = await serverRefresh(srv);
    }
    const meta = currentMetadataFile(table);
    const spec = await specRows(table, meta);
    const want = model.map(rowKey);
    let truth;
    let truthName;
    if (spec.dvs === 0) {
      truth = await icebirdRows(table, meta);
      truthName = 'icebird';
      const ds = diff(spec.rows, truth);
      if (!ds.equal) {
        stats.truthFailures++;
        console.log(`TRUTH-MISMATCH ${label} step ${step} (${desc}): spec reader vs icebird: ${show(ds)}`);
      }
    } else {
      truth = spec.rows;
      truthName = `spec reader (${spec.dvs} deletion vectors)`;
    }
    const dm = diff(truth, want);
    if (!dm.equal) {
      stats.truthFailures++;
      console.log(`TRUTH-MISMATCH ${label} step ${step} (${desc}): ${truthName} vs the plan's model: ${show(dm)}`);
    }
    const fb = /fallback (\w+)/.exec(refresh);
    if (fb) stats.fallbacks[fb[1]] = (stats.fallbacks[fb[1]] || 0) + 1;
    const got = CLI ? accelerationRows(dir) : await serverRows(srv);
    const d = diff(got, truth);
    stats.compared++;
    if (d.equal) {
      stats.matched++;
      if (VERBOSE) console.log(`ok ${label} step ${step} (${desc}): ${truth.length} rows [${truthName}] | ${refresh}`);
    } else {
      stats.mismatched++;
      console.log(`MISMATCH ${label} step ${step} (${desc}): acceleration ${got.length} rows, ${truthName} ${truth.length}: ${show(d)} | refresh: ${refresh}`);
    }
  }
  } finally {
    if (srv) await stopServer(srv);
  }
  const ops = Object.entries(stats.ops).map(([k, v]) => `${k} ${v}`).join(', ');
  console.log(`plan ${label}: ${SNAPS} steps (${ops}); ${stats.compared} compared, ${stats.matched} equal, ${stats.mismatched} mismatched, ${stats.truthFailures} truth failures${stats.refused ? ', configuration refused' : ''}; fallbacks: ${Object.entries(stats.fallbacks).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`);
  return stats;
}

if (READ_TRUTH) {
  const meta = currentMetadataFile(READ_TRUTH);
  const spec = await specRows(READ_TRUTH, meta);
  let rows = spec.rows;
  if (spec.dvs === 0) {
    rows = await icebirdRows(READ_TRUTH, meta);
    if (!diff(spec.rows, rows).equal) {
      console.error(`${READ_TRUTH}: the spec reader and icebird disagree: ${show(diff(spec.rows, rows))}`);
      process.exit(1);
    }
  }
  rows.sort();
  process.stdout.write(rows.join('\n') + (rows.length ? '\n' : ''));
  process.exit(0);
}

let mismatched = 0;
let truthFailures = 0;
let compared = 0;
let refused = 0;
for (let p = FIRST; p < FIRST + PLANS; p++) {
  const s = await runPlan(p);
  mismatched += s.mismatched;
  truthFailures += s.truthFailures;
  compared += s.compared;
  refused += s.refused;
}
console.log(`total: ${PLANS} plans, ${compared} snapshots compared, ${mismatched} mismatched, ${truthFailures} truth failures, ${refused} plans refused (seed ${SEED}, mode ${MODE}, every ${EVERY})`);
if (truthFailures || refused) process.exit(1);
if (EXPECT_DRIFT) {
  if (mismatched === 0) {
    console.log(`expected the ${MODE} acceleration to drift from the table, and it never did`);
    process.exit(1);
  }
  process.exit(0);
}
process.exit(mismatched ? 1 : 0);
