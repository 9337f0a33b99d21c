setup() {
  write_parquet cool_dataset.parquet "SELECT i AS id, 'name ' || i AS name, i * 1.5 AS score FROM range(0, 250) t(i)"
  s3pub_put s3-bucket-name path/to/parquet/cool_dataset.parquet cool_dataset.parquet
}
