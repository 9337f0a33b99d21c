// Canonical text of Parquet files as DuckDB (threads=1) reads them: the same
// CSV that `tidemark parquet cat --format csv` prints, so that a plain text
// comparison is a differential test of tidemark's reader (tests/node/
// parquet-difftest.mjs). The text forms mirror src/format/arrow/render.c:
// floats in the shortest %g form that reads back, decimals exactly, dates
// YYYY-MM-DD, timestamps RFC 3339 with the fewest exact fraction digits (Z
// when zoned), times HH:MM:SS[.f], UUIDs 8-4-4-4-12, binaries printable ASCII
// with \xHH escapes; CSV quoting as tm_out (RFC 4180, "" for empty text).
//
// As a program: node parquet-canonical.mjs OUTDIR FILE...  writes OUTDIR/<i>.csv
// for the i-th file, or OUTDIR/<i>.err with DuckDB's error message.
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// C's printf("%.*g", prec, x) for finite x.
function fmtG(x, prec) {
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const e = x.toExponential(prec - 1); // d.ddde±X, correctly rounded
  const m = /^(-?)(\d)(?:\.(\d*))?e([+-]\d+)$/.exec(e);
  const exp = parseInt(m[4], 10);
  if (exp < -4 || exp >= prec) {
    let mant = m[2] + (m[3] ? '.' + m[3] : '');
    if (mant.includes('.')) mant = mant.replace(/0+$/, '').replace(/\.$/, '');
    const ae = Math.abs(exp);
    return m[1] + mant + 'e' + (exp < 0 ? '-' : '+') + (ae < 10 ? '0' + ae : String(ae));
  }
  let s = x.toFixed(Math.max(0, prec - 1 - exp));
  if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return s;
}

function fmtDouble(x) {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  let s = '';
  for (let p = 15; p <= 17; p++) {
    s = fmtG(x, p);
    if (parseFloat(s) === x) break;
  }
  return s;
}

function fmtFloat(x) {
  const f = Math.fround(x);
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? 'inf' : '-inf';
  let s = '';
  for (let p = 6; p <= 9; p++) {
    s = fmtG(f, p);
    if (Math.fround(parseFloat(s)) === f) break;
  }
  return s;
}

function pad(n, w) {
  const s = String(n);
  return s.length >= w ? s : '0'.repeat(w - s.length) + s;
}

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
function civil(days) {
  let z = days + 719468n;
  const era = (z >= 0n ? z : z - 146096n) / 146097n;
  const doe = z - era * 146097n;
  const yoe = (doe - doe / 1460n + doe / 36524n - doe / 146096n) / 365n;
  let y = yoe + era * 400n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const d = doy - (153n * mp + 2n) / 5n + 1n;
  const m = mp < 10n ? mp + 3n : mp - 9n;
  if (m <= 2n) y += 1n;
  return [y, m, d];
}

function fmtDate(days) {
  const [y, m, d] = civil(BigInt(days));
  const ys = y < 0n ? '-' + pad(-y, 3) : pad(y, 4);
  return `${ys}-${pad(m, 2)}-${pad(d, 2)}`;
}

function floorDiv(a, b) {
  const q = a / b;
  return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q;
}

function fraction(v, digits) {
  if (v === 0n) return '';
  let s = pad(v, digits);
  s = s.replace(/0+$/, '');
  return '.' + s;
}

// v: bigint in units of 10^-digits seconds since the epoch.
function fmtTimestamp(v, digits, zoned) {
  const per = 10n ** BigInt(digits);
  const sec = floorDiv(v, per);
  const frac = v - sec * per;
  const days = floorDiv(sec, 86400n);
  const rem = sec - days * 86400n;
  const hh = rem / 3600n, mm = (rem / 60n) % 60n, ss = rem % 60n;
  return `${fmtDate(days)}T${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}` +
         fraction(frac * (10n ** BigInt(9 - digits)), 9) + (zoned ? 'Z' : '');
}

function fmtTime(v, digits) {
  const per = 10n ** BigInt(digits);
  const sec = floorDiv(v, per);
  const frac = v - sec * per;
  const hh = sec / 3600n, mm = (sec / 60n) % 60n, ss = sec % 60n;
  return `${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}` + fraction(frac, digits);
}

// DuckDB's text of a TIME, TIME_NS or TIMETZ ("12:34:56.5", "12:34:56.123456789+00")
// in tidemark's form: the zone dropped, trailing fraction zeros trimmed.
function fmtTimeText(v) {
  const m = /^(\d\d:\d\d:\d\d)(?:\.(\d+))?([+-].*)?$/.exec(v);
  if (!m) throw new Error(`unexpected TIME text ${v}`);
  const frac = (m[2] || '').replace(/0+$/, '');
  return m[1] + (frac ? '.' + frac : '');
}

export function fmtBlobHex(hex) {
  let s = '';
  for (let i = 0; i < hex.length; i += 2) {
    const c = parseInt(hex.slice(i, i + 2), 16);
    if (c >= 0x20 && c < 0x7f && c !== 0x5c) s += String.fromCharCode(c);
    else s += '\\x' + hex.slice(i, i + 2).toUpperCase();
  }
  return s;
}

export function csvField(s) {
  if (s === null) return '';
  if (s === '') return '""';
  const quote = /[,"\r\n]/.test(s) || s[0] === ' ' || s[s.length - 1] === ' ';
  return quote ? '"' + s.replace(/"/g, '""') + '"' : s;
}

function ident(name) { return '"' + name.replace(/"/g, '""') + '"'; }

// The SQL expression and the JS renderer for one column of a DuckDB type.
function plan(name, type) {
  const c = ident(name);
  const t = type.toUpperCase();
  if (t === 'BOOLEAN') return [`CASE WHEN ${c} IS NULL THEN NULL WHEN ${c} THEN 'true' ELSE 'false' END`, (v) => v];
  if (/^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/.test(t))
    return [`CAST(${c} AS VARCHAR)`, (v) => v];
  if (t === 'FLOAT') return [c, (v) => fmtFloat(v)];
  if (t === 'DOUBLE') return [c, (v) => fmtDouble(v)];
  if (t.startsWith('DECIMAL')) return [`CAST(${c} AS VARCHAR)`, (v) => v];
  if (t === 'DATE') return [`CAST(${c} - DATE '1970-01-01' AS VARCHAR)`, (v) => fmtDate(BigInt(v))];
  if (t === 'TIMESTAMP_NS') return [`CAST(epoch_ns(${c}) AS VARCHAR)`, (v) => fmtTimestamp(BigInt(v), 9, false)];
  if (t === 'TIMESTAMP' || t === 'TIMESTAMP_MS' || t === 'TIMESTAMP_S')
    return [`CAST(epoch_us(${c}) AS VARCHAR)`, (v) => fmtTimestamp(BigInt(v), 6, false)];
  if (t === 'TIMESTAMP WITH TIME ZONE')
    return [`CAST(epoch_us(${c}) AS VARCHAR)`, (v) => fmtTimestamp(BigInt(v), 6, true)];
  if (t === 'TIME' || t === 'TIME WITH TIME ZONE' || t === 'TIME_NS')
    return [`CAST(${c} AS VARCHAR)`, (v) => fmtTimeText(v)];
  if (t === 'VARCHAR' || t === 'JSON' || t === 'UUID') return [`CAST(${c} AS VARCHAR)`, (v) => v];
  if (t === 'BLOB') return [`hex(${c})`, (v) => fmtBlobHex(v)];
  return null;
}


export async function openDuckDB() {
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  return db.connect();
}

// The canonical CSV of a Parquet file (optionally of some columns, the first
// `limit` rows; `from` may wrap the read_parquet call in a subquery). Throws
// DuckDB's error when it cannot read the file.
export async function canonical(con, file, columns = null, limit = null, from = null) {
  let src = `read_parquet('${file.replace(/'/g, "''")}')`;
  if (from) src = from(src);
  const desc = await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`);
  let cols = desc.getRows().map((r) => [String(r[0]), String(r[1])]);
  if (columns) {
    cols = columns.map((n) => {
      const c = cols.find(([m]) => m === n);
      if (!c) throw new Error(`DuckDB sees no column ${n}`);
      return c;
    });
  }
  const plans = cols.map(([n, t]) => plan(n, t));
  const bad = cols.findIndex((_, k) => plans[k] === null);
  if (bad >= 0) throw new Error(`column ${cols[bad][0]} has type ${cols[bad][1]}, which has no canonical form`);
  let sql = cols.length ? `SELECT ${plans.map((p) => p[0]).join(', ')} FROM ${src}` : `SELECT * FROM ${src}`;
  if (limit !== null) sql += ` LIMIT ${limit}`;
  const reader = await con.runAndReadAll(sql);
  const lines = [cols.map(([n]) => csvField(n)).join(',')];
  for (const row of reader.getRows())
    lines.push(row.map((v, k) => csvField(v === null || v === undefined ? null : plans[k][1](v))).join(','));
  return lines.join('\r\n') + '\r\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [outdir, ...files] = process.argv.slice(2);
  if (!outdir || files.length === 0) {
    console.error('usage: parquet-canonical.mjs OUTDIR FILE...');
    process.exit(2);
  }
  const con = await openDuckDB();
  for (let i = 0; i < files.length; i++) {
    try {
      writeFileSync(`${outdir}/${i}.csv`, await canonical(con, files[i]));
    } catch (e) {
      writeFileSync(`${outdir}/${i}.err`, String(e.message || e).split('\n')[0] + '\n');
    }
  }
}
