setup() {
  duckdb_query "COPY (SELECT 'a' || i AS id, i AS v FROM range(0, 50) t(i)) TO 'a.parquet' (FORMAT PARQUET);
    COPY (SELECT 'b' || i AS id, i AS v FROM range(0, 50) t(i)) TO 'b.parquet' (FORMAT PARQUET);" > /dev/null
  s3pub_put my-bucket my_dataset/a.parquet a.parquet
  s3pub_put my-bucket my_dataset/b.parquet b.parquet
}
# A new object, modified after the others (S3 times have whole seconds).
new_object() {
  sleep 1.1
  write_parquet c.parquet "SELECT 'c' || i AS id, i * 2 AS v FROM range(0, 30) t(i)"
  s3pub_put my-bucket my_dataset/c.parquet c.parquet
}
