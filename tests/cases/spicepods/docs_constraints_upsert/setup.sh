# Blocks with some hashes twice (a re-org: another number and timestamp).
setup() {
  write_parquet recent_blocks.parquet "
    SELECT '0x' || md5('block' || (CASE WHEN i >= 200 THEN i - 200 ELSE i END)) AS hash,
           19000000 + i AS number, TIMESTAMP '2024-02-01 00:00:00' + to_seconds((i * 12)::BIGINT) AS timestamp,
           (i * 31) % 300 AS transaction_count
    FROM range(0, 210) t(i)"
}
