# The Glue table tpch.lineitem: Parquet files (a StorageDescriptor, as Glue keeps
# a Hive-style table) in this folder; the recipe's .env holds the test keys.
setup() {
  mkdir -p lineitem
  local part sql=
  for part in 0 1; do
    sql+="COPY (
      SELECT 1 + i // 4 AS l_orderkey, 1 + (i * 37) % 2000 AS l_partkey, 1 + (i * 11) % 100 AS l_suppkey,
             1 + i % 4 AS l_linenumber, CAST(1 + i % 50 AS DECIMAL(15, 2)) AS l_quantity,
             CAST(900 + (i * 7) % 100000 / 100.0 AS DECIMAL(15, 2)) AS l_extendedprice,
             CAST((i % 11) / 100.0 AS DECIMAL(15, 2)) AS l_discount, CAST((i % 9) / 100.0 AS DECIMAL(15, 2)) AS l_tax,
             ['A', 'N', 'R'][i % 3 + 1] AS l_returnflag, ['F', 'O'][i % 2 + 1] AS l_linestatus,
             CAST(DATE '1992-01-02' + to_days((i % 2500)::INTEGER) AS DATE) AS l_shipdate, 'MAIL' AS l_shipmode
      FROM range($part * 1500, ($part + 1) * 1500) t(i)) TO 'lineitem/part-$part.parquet' (FORMAT PARQUET);"
  done
  duckdb_query "$sql" > /dev/null
  glue_table tpch lineitem "{\"Parameters\": {\"classification\": \"parquet\"}, \"StorageDescriptor\": {\"Location\": \"$PWD/lineitem/\", \"InputFormat\": \"org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat\"}}"
  printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_REGION=us-east-1\n' "$GLUEKEY" "$GLUESECRET" > .env
}
