# The table my_namespace.my_table in the test catalog's warehouse (two append
# snapshots), and the token in .env as Spice's env secret store reads it.
setup() {
  ice_create "$T/icewh/my_namespace/my_table"
  ice_append "$T/icewh/my_namespace/my_table" "1,2024-01-01T00:00:01Z,a" "2,2024-01-01T00:00:02Z,b"
  ice_append "$T/icewh/my_namespace/my_table" "3,2024-01-02T00:00:00Z,c"
  echo "ICEBERG_TOKEN=$ICETOKEN" > .env
}
