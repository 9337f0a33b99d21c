// Generates the seed corpora of the Parquet fuzz targets with DuckDB:
//   fuzz/corpora/fuzz_parquet_footer/  small whole files (types, nulls, codecs,
//                                      v1/v2 pages, several row groups)
//   fuzz/corpora/fuzz_parquet_page/    their column chunks, each behind the
//                                      4-byte column descriptor fuzz_parquet_page.c reads
// Run: node tests/node/gen-parquet-fuzz-seeds.mjs
// The outputs are committed; rerun only to refresh them.
import { DuckDBInstance } from '@duckdb/node-api';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const footerDir = join(repo, 'fuzz/corpora/fuzz_parquet_footer');
const pageDir = join(repo, 'fuzz/corpora/fuzz_parquet_page');
for (const d of [footerDir, pageDir]) {
  mkdirSync(d, { recursive: true });
  for (const f of readdirSync(d)) if (f.startsWith('duckdb-')) rmSync(join(d, f));
}
const tmp = mkdtempSync(join(tmpdir(), 'tm-seeds-'));
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await db.connect();

const tables = {
  ints: `SELECT i % 2 = 0 AS b, (i % 100)::TINYINT AS t, i::SMALLINT AS s, i::INTEGER * 7 AS n,
           CASE WHEN i % 5 = 0 THEN NULL ELSE i::BIGINT * 1000003 END AS l,
           (i % 200)::UTINYINT AS ut, i::UBIGINT AS ub FROM range(60) r(i)`,
  floats: `SELECT (i / 3)::FLOAT AS f, CASE WHEN i % 7 = 0 THEN 'nan'::DOUBLE ELSE i * 1.5 END AS d,
             (i * 12.34)::DECIMAL(9,2) AS d9, (i * -9.876)::DECIMAL(18,3) AS d18,
             (i * 1234567.891)::DECIMAL(30,5) AS d30 FROM range(40) r(i)`,
  strings: `SELECT CASE WHEN i % 4 = 0 THEN NULL ELSE 'k' || (i % 3) END AS kind,
              repeat('x', i % 9) || i AS payload, ('\\x' || lpad(to_hex(i % 256), 2, '0'))::BLOB AS bin,
              uuid() AS u FROM range(50) r(i)`,
  times: `SELECT DATE '1969-12-25' + i::INTEGER AS day, TIME '00:00:01' + INTERVAL (i * 61) SECOND AS tm,
            TIMESTAMP '1999-12-31 23:59:59.123456' + INTERVAL (i) HOUR AS ts,
            TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i * 7) MINUTE AS tz FROM range(30) r(i)`,
};
const variants = [
  ['uncompressed', 'V1', 1000], ['snappy', 'V1', 16], ['zstd', 'V2', 1000], ['gzip', 'V2', 25],
  ['lz4_raw', 'V1', 1000], ['brotli', 'V2', 1000],
];
const codecId = { UNCOMPRESSED: 0, SNAPPY: 1, GZIP: 2, LZO: 3, BROTLI: 4, LZ4: 5, ZSTD: 6, LZ4_RAW: 7 };
const physId = { BOOLEAN: 0, INT32: 1, INT64: 2, INT96: 3, FLOAT: 4, DOUBLE: 5, BYTE_ARRAY: 6, FIXED_LEN_BYTE_ARRAY: 7 };

let n = 0;
for (const [name, sql] of Object.entries(tables)) {
  for (const [codec, ver, rg] of variants) {
    const out = join(tmp, `${name}-${codec}-${ver}.parquet`);
    await con.run(`COPY (${sql}) TO '${out}' (FORMAT parquet, COMPRESSION ${codec}, PARQUET_VERSION ${ver}, ROW_GROUP_SIZE ${rg})`);
    const bytes = readFileSync(out);
    if (bytes.length <= 8192) writeFileSync(join(footerDir, `duckdb-${name}-${codec}-${ver}.parquet`), bytes);
    const meta = await con.runAndReadAll(
      `SELECT row_group_id, column_id, type, compression, num_values, data_page_offset,
              dictionary_page_offset, total_compressed_size, stats_null_count
         FROM parquet_metadata('${out}') ORDER BY row_group_id, column_id`);
    for (const r of meta.getRows()) {
      const [rgid, col, type, comp, nv, dpo, dicto, size] = r.map((v) => (typeof v === 'bigint' ? Number(v) : v));
      if (rgid > 0) continue;
      const start = dicto !== null && dicto > 0 && dicto < dpo ? dicto : dpo;
      const chunk = bytes.subarray(start, start + size);
      if (chunk.length > 4096) continue;
      const phys = physId[type];
      const prefix = Buffer.from([phys, 1 | (codecId[comp] << 1), nv & 0xff, (nv >> 8) & 0xff]);
      writeFileSync(join(pageDir, `duckdb-${name}-${codec}-${ver}-c${col}`), Buffer.concat([prefix, chunk]));
      n++;
    }
  }
}
rmSync(tmp, { recursive: true });
console.log(`wrote ${readdirSync(footerDir).length} footer seeds, ${n} page seeds`);
