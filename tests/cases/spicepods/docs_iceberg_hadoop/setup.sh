setup() {
  local t=hadoop_warehouse/test/my_table_1
  ice_create "$t"
  ice_append "$t" "1,2024-05-01T00:00:00Z,p" "2,2024-05-01T00:00:01Z,q"
  ice_append "$t" "3,2024-05-02T00:00:00Z,r" "4,2024-05-02T00:00:01Z,s"
  ICEMETA=$PWD/$t/metadata/v$(cat "$t/metadata/version-hint.text").metadata.json
  [[ -f $ICEMETA ]] || fail "no metadata file $ICEMETA"
}
