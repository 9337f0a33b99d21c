setup() {
  printf 'id,label\n1,one\n2,two\n3,three\n' > test_csv.csv
  az mkcontainer testcontainer >/dev/null
  az put testcontainer test_csv.csv test_csv.csv >/dev/null
  export AZURITE_BLOB_STORAGE_URL=http://127.0.0.1:$AZ_PORT
}
