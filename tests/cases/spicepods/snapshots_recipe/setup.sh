# The recipe's .env (Step 2): the snapshot bucket's keys.
setup() {
  printf 'S3_SNAPSHOT_KEY=%s\nS3_SNAPSHOT_SECRET=%s\nS3_SNAPSHOT_REGION=us-east-1\n' "$S3KEY" "$S3SECRET" > .env
}
# Step 4: after the first refresh a snapshot of taxi_trips is in the bucket,
# under the recipe's prefix, and the acceleration is the recipe's duckdb_file.
snapshot_written() {
  [[ -f taxi_trips.db ]] || fail "no acceleration file taxi_trips.db"
  local end=$((SECONDS + 30)) keys=
  while ((SECONDS < end)); do
    keys=$(s3priv_keys my-snapshots-prod quickstart/ || true)
    grep -q '^quickstart/dataset=taxi_trips/taxi_trips_[0-9TZ]*\.duckdb$' <<<"$keys" && return 0
    sleep 0.2
  done
  fail "no snapshot of taxi_trips under s3://my-snapshots-prod/quickstart/: [$keys]"
}
