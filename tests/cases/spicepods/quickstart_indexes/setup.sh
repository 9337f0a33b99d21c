# The quickstart's Ethereum traces (its columns), 20,000 rows.
setup() {
  write_parquet large_eth_traces.parquet "
    SELECT '0x' || md5('trace' || i) AS trace_id, 18000000 + i // 40 AS block_number,
           '0x' || substr(md5('tx' || (i // 3)), 1, 64) AS transaction_hash, i % 40 AS transaction_index,
           '0x' || substr(md5('from' || (i % 997)), 1, 40) AS from_address,
           '0x' || substr(md5('to' || (i % 1301)), 1, 40) AS to_address,
           (i % 1000) * 1000000000000 AS value, 21000 + (i * 17) % 100000 AS gas_used,
           ['call', 'create', 'suicide', 'reward'][i % 4 + 1] AS trace_type
    FROM range(0, 20000) t(i)"
}
