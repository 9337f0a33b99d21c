setup() {
  mkdir -p path/to
  write_parquet path/to/customer.parquet "
    SELECT i AS c_custkey, 'Customer#' || lpad(i::VARCHAR, 9, '0') AS c_name, i % 25 AS c_nationkey,
           CAST((i * 7919) % 1000000 / 100.0 AS DECIMAL(15, 2)) AS c_acctbal
    FROM range(1, 301) t(i)"
  for i in $(seq 1 200); do printf '%d,%d,%s,%d\n' "$i" $((i % 300 + 1)) "$([[ $((i % 2)) == 0 ]] && echo O || echo F)" $((i * 13 % 1000)); done > path/to/orders.csv
}
