# A table written with `tidemark iceberg`, then copied into the bucket at the
# docs' path (a file-system "Hadoop" table: metadata/ beside data/).
setup() {
  ice_create tbl
  ice_append tbl "10,2024-03-01T00:00:00Z,x" "20,2024-03-01T00:00:01Z,y"
  ice_append tbl "30,2024-03-02T00:00:00Z,z"
  (cd tbl && find . -type f | sed 's|^\./||') | while read -r f; do
    s3pub_put my-bucket "hadoop_warehouse/test/my_table_2/$f" "tbl/$f"
  done
}
