// Spice's official JS client (@spiceai/spice, spice.js) as a real client of
// tidemark's POST /v1/sql, for tests/integration/test_runtime_sql_spice_formats.sh.
// httpOnly: tidemark has no Arrow Flight endpoint, and spice.js then speaks
// HTTP only: sql() sends the SQL as text/plain (Accept: application/json) or,
// with parameters, Spice's JSON envelope {"sql", "parameters"} as
// application/json, and builds an Arrow table of the answer; sqlJson() asks
// for application/vnd.spiceai.sql.v1+json and returns {row_count, schema, data}.
// Usage: node spice-client.mjs BASE_URL
// Prints one JSON object: each case's rows (or its error message).
import { SpiceClient } from '@spiceai/spice';

const base = process.argv[2];
const client = new SpiceClient({ httpUrl: base, httpOnly: true, logging: false });

// Arrow rows to plain JSON (64-bit integers come back as BigInt).
const plain = (rows) =>
  JSON.parse(JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)));

const run = async (what) => {
  try {
    return await what();
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
};

const out = {};
out.text = await run(async () =>
  plain((await client.sql('SELECT id, name FROM events WHERE id <= 2 ORDER BY id')).toArray()));
out.positional = await run(async () =>
  plain((await client.sql('SELECT id, name FROM events WHERE id = $1 OR name = $2 ORDER BY id', {
    parameters: [1, "it's \"three\""],
  })).toArray()));
out.named = await run(async () =>
  plain((await client.sql('SELECT id FROM events WHERE id = $id AND ok = $ok', {
    parameters: { id: 2, ok: false },
  })).toArray()));
out.named_colon = await run(async () =>
  plain((await client.sql('SELECT id FROM events WHERE ts >= :since ORDER BY id', {
    parameters: { since: new Date('2024-01-01T00:00:02Z') },
  })).toArray()));
out.refused = await run(async () =>
  plain((await client.sql('DELETE FROM events WHERE id = $1', { parameters: [1] })).toArray()));
out.json = await run(async () => {
  const r = await client.sqlJson('SELECT id, name, amount FROM events ORDER BY id LIMIT 2');
  return { row_count: r.row_count, fields: r.schema.fields, data: plain(r.data) };
});
console.log(JSON.stringify(out));
