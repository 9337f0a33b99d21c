# The table my_namespace.my_table in the OAuth2 catalog's warehouse.
setup() {
  ice_create "$T/iceoauthwh/my_namespace/my_table"
  ice_append "$T/iceoauthwh/my_namespace/my_table" "7,2024-04-01T00:00:00Z,o" "8,2024-04-01T00:00:01Z,k"
}
# Every catalog request tidemark made carried a token the catalog issued.
catalog_saw_tokens() {
  grep -q 'oauth/tokens' "$T/iceoauth.log" || fail "no token request in $(cat "$T/iceoauth.log")"
  ! grep -q ' 401' "$T/iceoauth.log" || fail "refused requests: $(grep ' 401' "$T/iceoauth.log")"
}
