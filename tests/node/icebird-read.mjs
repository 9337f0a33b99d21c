// Reads an Iceberg table with icebird (an independent JavaScript reader) and
// prints its rows as JSON lines, sorted, for tests that compare tidemark's
// reader and writer with it. icebird fetches over HTTP; for a table on the
// local disk this script answers fetch() for file:// URLs itself (with Range
// support), so it runs offline.
// Usage: node icebird-read.mjs TABLE_DIR [METADATA_FILE_NAME]
import fs from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { icebergRead } from 'icebird';

const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input.url;
  if (!url.startsWith('file:')) return realFetch(input, init);
  const path = fileURLToPath(url);
  if (!fs.existsSync(path)) return new Response('not found', { status: 404, statusText: 'Not Found' });
  const data = fs.readFileSync(path);
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

const [dir, metadataFileName] = process.argv.slice(2);
if (!dir) {
  console.error('usage: icebird-read.mjs TABLE_DIR [METADATA_FILE_NAME]');
  process.exit(2);
}
const tableUrl = pathToFileURL(fs.realpathSync(dir)).href;
try {
  const rows = await icebergRead({ tableUrl, metadataFileName });
  // Values as JSON can hold them, nested ones too (lists, structs, maps).
  const text = (v) => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Date) return v.toISOString();
    if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
    if (Array.isArray(v)) return v.map(text);
    if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), text(x)]));
    if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, text(x)]));
    return v;
  };
  const lines = rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, text(v)]))));
  lines.sort();
  process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''));
} catch (e) {
  console.error(`icebird: ${e.message || e}`);
  process.exit(1);
}
