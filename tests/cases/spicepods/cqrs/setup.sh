# The recipe's products and orders (each product's order total is distinct).
setup() {
  duckdb_query "
    COPY (SELECT i AS id, 'product ' || chr(64 + i::INTEGER) AS name FROM range(1, 9) t(i))
      TO 'products.parquet' (FORMAT PARQUET);
    COPY (SELECT i AS id, (i % 8) + 1 AS product_id, ((i % 8) + 1) * 3 + i % 2 AS count FROM range(0, 40) t(i))
      TO 'orders.parquet' (FORMAT PARQUET);" > /dev/null
}
