# A throwaway PostgreSQL 15 server for tests and benchmarks (sourced, not run).
# pg_start: initdb + pg_ctl in a temporary folder, listening on 127.0.0.1 only,
# password authentication (scram-sha-256) for user tm / password tm-secret.
# Run as root (CI), the server runs as the unprivileged user nobody (initdb
# refuses root). pg_stop (also run at exit by pg_start's trap) stops it and
# removes the folder. Sets PG_PORT, PG_DIR; pg_psql runs psql against it.
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
PG_DIR=""
PG_PORT=""
PG_USER=tm
PG_PASS=tm-secret

pg_as() {
  if [[ $(id -u) -eq 0 ]]; then setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
  else "$@"; fi
}

pg_free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 30000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

pg_stop() {
  [[ -n $PG_DIR && -d $PG_DIR ]] || return 0
  pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=""
}

pg_start() {
  [[ -x $PG_BIN/initdb ]] || fail "PostgreSQL server binaries missing (Debian postgresql; scripts/install-deps installs it)"
  # As root the server runs as nobody, who must reach the folder: /tmp, not a private TMPDIR.
  if [[ $(id -u) -eq 0 ]]; then PG_DIR=$(mktemp -d /tmp/tm-pg-XXXXXX)
  else PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tm-pg-XXXXXX"); fi
  chmod 755 "$PG_DIR"
  echo "$PG_PASS" > "$PG_DIR/pw"
  [[ $(id -u) -eq 0 ]] && chown -R nobody:nogroup "$PG_DIR"
  pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U "$PG_USER" --pwfile="$PG_DIR/pw" \
    --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; fail "initdb failed"; }
  PG_PORT=$(pg_free_port) || fail "no free port for PostgreSQL"
  pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -w -t 60 -l "$PG_DIR/server.log" \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$PG_DIR -c fsync=${PG_FSYNC:-on} -c max_connections=200" \
    start >/dev/null || { cat "$PG_DIR/server.log" >&2; fail "PostgreSQL did not start"; }
  trap 'rc=$?; pg_stop; if [[ $rc -eq 0 || $rc -eq 77 ]]; then rm -rf "$T"; else echo "files kept in $T" >&2; fi; jobs -p | xargs -r kill 2>/dev/null || true' EXIT
}

pg_psql() { PGPASSWORD=$PG_PASS psql -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -v ON_ERROR_STOP=1 "$@"; }

# The acceleration params block of a spicepod (indented for acceleration:).
pg_params() {
  cat <<YAML
      params:
        pg_host: 127.0.0.1
        pg_port: "$PG_PORT"
        pg_db: postgres
        pg_user: $PG_USER
        pg_pass: $PG_PASS
        pg_sslmode: disable
YAML
}
