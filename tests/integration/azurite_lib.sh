# Azurite (npm azurite, tests/node) for integration tests (sourced after lib.sh).
# start_azurite: starts azurite-blob on 127.0.0.1 with a kernel-chosen port,
# in memory, and sets AZ_PORT, AZ_PID and AZ_EP (the account URL of
# devstoreaccount1, path-style). az ARGS...: tests/tools/azblob.py against it
# (Shared Key signed in Python, independently of tidemark).
AZURITE_MAIN=$TM_SOURCE_DIR/tests/node/node_modules/azurite/dist/src/blob/main.js
start_azurite() {
  [[ -f $AZURITE_MAIN ]] || skip "azurite is not installed (scripts/install-test-deps)"
  command -v python3 >/dev/null || skip "python3 is missing"
  : > "$T/azurite.out"
  node "$AZURITE_MAIN" --blobHost 127.0.0.1 --blobPort "${1:-0}" --inMemoryPersistence \
    --extentMemoryLimit 256 --disableTelemetry --silent > "$T/azurite.out" 2>&1 &
  AZ_PID=$!
  AZ_PORT=
  for _ in $(seq 150); do
    AZ_PORT=$(sed -n 's|.*successfully listens on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/azurite.out")
    [[ -n $AZ_PORT ]] && break
    kill -0 "$AZ_PID" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $AZ_PORT ]] || { cat "$T/azurite.out" >&2; fail "azurite did not start"; }
  AZ_EP="http://127.0.0.1:$AZ_PORT/devstoreaccount1"
}
stop_azurite() { kill "$AZ_PID" 2>/dev/null || true; wait "$AZ_PID" 2>/dev/null || true; }
az() { python3 "$TM_SOURCE_DIR/tests/tools/azblob.py" --endpoint "$AZ_EP" "$@"; }
