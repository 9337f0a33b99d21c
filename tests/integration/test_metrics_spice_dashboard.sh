#!/usr/bin/env bash
# Spice's own dashboard and documented PromQL against a running tidemark
# (issue 17; SPEC 1.4): a real `tidemark run` on a small pod, scraped every
# second by Debian's Prometheus on loopback, and every query of
# tests/cases/metrics/spice_dashboard_queries.txt evaluated through
# Prometheus's HTTP API with Grafana's variables substituted as Grafana does.
# An expected query returns series (with values checked where they are
# known), an expected-empty one (a metric tidemark does not export) returns
# none, and the families carry Spice's label names. `promtool check metrics`
# reads a scrape.
#
# The pod: `events`, a file dataset appended to on a 1 s interval; `fed`, a
# federated file dataset; `ice`, an Iceberg table whose snapshot is rolled
# back so that one append refresh falls back to reading by time (B6); and
# `flaky`, a file dataset whose source turns unreadable after it loaded, so
# that its refresh fails every second. The /v1/sql queries run twice, 6 s
# apart (more than $__rate_interval, 4 s), each round with three that succeed and
# three that fail: one does not bind, one passes the memory limit, one fails
# while it runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps)"
command -v promtool >/dev/null || fail "promtool is not installed (scripts/install-deps)"
QUERIES=$TM_SOURCE_DIR/tests/cases/metrics/spice_dashboard_queries.txt
[[ -f $QUERIES ]] || fail "missing $QUERIES"
cd "$T"

mkdir -p events fedsrc flaky
gen_jsonl events/a.jsonl 1 5
gen_jsonl fedsrc/a.jsonl 1 3
gen_jsonl flaky/a.jsonl 1 2
cat > tm.yaml <<YAML
version: v1
kind: Spicepod
name: dashboard
runtime:
  query:
    memory_limit: 32MiB
datasets:
  - from: file:events
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {enabled: true, refresh_mode: append, refresh_check_interval: 1s}
  - from: file:fedsrc
    name: fed
    params: {file_format: jsonl}
  - from: iceberg:file://wh/ice
    name: ice
    time_column: ts
    acceleration: {enabled: true, refresh_mode: append, refresh_check_interval: 1h}
  - from: file:flaky
    name: flaky
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {enabled: true, refresh_mode: append, refresh_check_interval: 1s}
YAML
ice_create wh/ice
ice_append wh/ice "1,2026-11-30T10:00:00Z,a"
first=$(tm iceberg history wh/ice --format csv | tr -d '\r' | sed -n 2p | cut -d, -f1)

start_ms=$(date +%s%3N)
start_server tm.yaml
wait_until 60 is_ready || fail "not ready"

# Prometheus: a 1 s scrape of the metrics address, its own data folder and a
# free loopback port; no pod label on the target (as in Spice's own docs).
PROM_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > prometheus.yml <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: tidemark
    static_configs:
      - targets: ['127.0.0.1:$METRICS_PORT']
YAML
prometheus --config.file=prometheus.yml --storage.tsdb.path="$T/prom" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --web.console.templates="$T/none" \
  --web.console.libraries="$T/none" --log.level=warn > prom.log 2>&1 &
PROM_PID=$!
PROM=http://127.0.0.1:$PROM_PORT
scraped() { # the target is up in Prometheus
  curl -sf "$PROM/api/v1/query" --data-urlencode 'query=up{job="tidemark"} == 1' |
    jq -e '.data.result | length == 1' >/dev/null
}
wait_until 30 scraped || { cat prom.log >&2; fail "Prometheus does not scrape tidemark"; }

# ice: a rollback makes the saved snapshot no ancestor, so the next append refresh
# reads by time (B6) and counts one fallback.
last_refresh() { curl -s "$BASE/v1/datasets/ice/acceleration" | jq -c .last_refresh; }
refresh_ice() {
  local before; before=$(last_refresh)
  api POST /v1/datasets/ice/acceleration/refresh
  assert_eq "$STATUS" 201 "trigger: $BODY"
  wait_until 30 bash -c "[[ \$(curl -s $BASE/v1/datasets/ice/acceleration | jq -c .last_refresh) != '$before' ]]" ||
    fail "the triggered refresh of ice did not finish"
}
ice_append wh/ice "2,2026-11-30T10:00:01Z,b"
refresh_ice
tm iceberg rollback wh/ice --to "$first" >/dev/null
ice_append wh/ice "3,2026-11-30T10:00:02Z,c"
refresh_ice
assert_eq "$(curl -s "$BASE/v1/datasets/ice/acceleration" | jq -r .last_refresh.fallback_reason)" \
  snapshot_not_ancestor "ice fell back"

# events: 4 more rows for the interval to pick up; flaky: a line that is no JSON.
gen_jsonl events/b.jsonl 6 4
printf 'this is not json\n' > flaky/b.jsonl
wait_until 20 count_is events 9 || fail "events: the appended file was not loaded"
wait_until 20 bash -c "curl -s $BASE/v1/datasets?status=true | jq -e '.[] | select(.name == \"flaky\" and .status == \"Error\")'" ||
  fail "flaky: not in Error after its source turned unreadable"
EVENTS_ROWS=$(sql_value "SELECT count(*) AS n FROM events")
ICE_ROWS=$(sql_value "SELECT count(*) AS n FROM ice")
EVENTS_MAX_MS=$(sql_value "SELECT epoch_ms(max(ts)::TIMESTAMPTZ) AS m FROM events")
assert_eq "$ICE_ROWS" 3 "ice rows after the fallback"

# Two rounds of queries, 6 s apart.
ok=("SELECT count(*) AS n FROM events" "SELECT count(*) AS n FROM events e JOIN fed f USING (id)"
    "SELECT count(*) AS n FROM ice")
bad=("SELECT nope FROM events" "SELECT string_agg(repeat('x', 100), ',') FROM range(2000000)"
     "SELECT CAST('x' || v AS INTEGER) AS n FROM events")
round() {
  local q
  for q in "${ok[@]}"; do sql "$q"; assert_eq "$STATUS" 200 "$q: $BODY"; done
  for q in "${bad[@]}"; do sql "$q"; assert_eq "$STATUS" 400 "$q: $BODY"; done
}
round
sleep 6
round

metrics > scrape.txt
python3 - "$QUERIES" "$PROM" <<PY
import json, math, sys, time, urllib.parse, urllib.request

path, prom = sys.argv[1], sys.argv[2]
start_ms, events_rows, ice_rows = $start_ms, $EVENTS_ROWS, $ICE_ROWS
events_max_ms = $EVENTS_MAX_MS

def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise SystemExit("FAIL: Prometheus answered %s to %s" % (body, url))
    return body["data"]

def query(expr, at):
    q = urllib.parse.urlencode({"query": expr, "time": "%.3f" % at})
    return get(prom + "/api/v1/query?" + q)

# The list.
records, source, cur = [], None, None
for line in open(path, encoding="utf-8"):
    line = line.rstrip("\n")
    if cur is not None and not line.strip():
        records.append(cur); cur = None; continue
    if line.startswith("#") or not line.strip():
        continue
    if line.startswith("source: ") and cur is None:
        source = line[8:]; continue
    if line.startswith("["):
        rid, _, rest = line[1:].partition("]")
        cur = {"id": rid, "source": source}
        for kv in rest.split():
            k, _, v = kv.partition("="); cur[k] = v
        continue
    key, _, value = line.partition(":")
    if cur is None or key not in ("where", "why", "expr", "labels", "emitted"):
        raise SystemExit("FAIL: %s: cannot read: %s" % (path, line))
    cur[key] = json.loads(value.strip()) if key == "expr" else value.strip()
if cur is not None:
    records.append(cur)
ids = [r["id"] for r in records]
assert len(ids) == len(set(ids)), "duplicate ids"
for r in records:
    for k in ("kind", "expect", "expr", "where", "source"):
        assert r.get(k), "%s: no %s" % (r["id"], k)
    assert r["expect"] in ("series", "empty") and r["kind"] in ("promql", "label_values"), r["id"]
    assert r["expect"] == "series" or r.get("why"), "%s: an expected-empty query says why" % r["id"]

# Grafana's substitutions (the list's header says why these values).
subst = [("\${pods}", "()"), ("\${percentile}", "0.95"), ("\$__rate_interval", "4s"),
         ("\$__range_ms", "1800000"), ("\$__range", "1800s")]
def grafana(expr):
    for k, v in subst:
        expr = expr.replace(k, v)
    assert "\$" not in expr, "an unsubstituted variable in " + expr
    return expr

# Wait until Prometheus has the second round: 2 failures of each kind.
deadline = time.time() + 20
while True:
    at = time.time()
    res = query('sum by (err_code) (query_failures)', at)["result"]
    got = {s["metric"].get("err_code"): float(s["value"][1]) for s in res}
    if got == {"QueryPlanningError": 2, "ResourcesExhausted": 2, "QueryExecutionError": 2}:
        break
    if time.time() > deadline:
        raise SystemExit("FAIL: Prometheus never saw both rounds of failures: %s" % got)
    time.sleep(0.3)
at = time.time()

def series_of(rid):
    return results[rid]

results, failures = {}, []
for r in records:
    if r["kind"] == "label_values":
        inner = r["expr"][len("label_values("):-1]
        metric, label = [x.strip() for x in inner.split(",")]
        q = urllib.parse.urlencode({"match[]": metric, "start": "%.3f" % (at - 1800), "end": "%.3f" % at})
        res = get(prom + "/api/v1/label/%s/values?%s" % (label, q))
    else:
        res = query(grafana(r["expr"]), at)["result"]
    results[r["id"]] = res
    if r["expect"] == "series" and not res:
        failures.append("%s (%s): no series for %s" % (r["id"], r["where"], r["expr"]))
    if r["expect"] == "empty" and res:
        failures.append("%s (%s): expected none, got %s" % (r["id"], r["where"], res))
    if r.get("emitted") is not None and res:
        want = set(x.strip() for x in r["emitted"].split(",") if x.strip())
        have = set()
        for s in res:
            have |= set(s["metric"]) - {"__name__", "job", "instance"}
        if have != want:
            failures.append("%s: labels %s, Spice's (as tidemark emits them) are %s" %
                            (r["id"], sorted(have), sorted(want)))

def value(rid, **labels):
    vals = [float(s["value"][1]) for s in results[rid]
            if all(s["metric"].get(k, "") == v for k, v in labels.items())]
    if len(vals) != 1:
        failures.append("%s: %d series with %s in %s" % (rid, len(vals), labels, results[rid]))
        return math.nan
    return vals[0]

def check(cond, what):
    if not cond:
        failures.append(what)

# Values that are known.
loaded = sum(float(s["value"][1]) for s in results["A04"])
check(loaded == 4, "A04: %s datasets loaded, want 4" % loaded)
check(value("A04", engine="None") == 1, "A04: one federated dataset (engine None)")
codes = {s["metric"].get("err_code") for s in results["A07"]}
check(codes == {"QueryPlanningError", "ResourcesExhausted", "QueryExecutionError"},
      "A07: error codes %s" % codes)
check({s["metric"].get("dataset") for s in results["A09"]} == {"flaky"}, "A09: %s" % results["A09"])
paths = {(s["metric"].get("method"), s["metric"].get("path")) for s in results["A19"]}
check(("GET", "/metrics") in paths and ("POST", "/v1/sql") in paths, "A19: %s" % paths)
check(float(results["B03"][0]["value"][1]) > 0.05, "B03: %s" % results["B03"])
check({s["metric"].get("dataset") for s in results["B04"]} == {"flaky"}, "B04: %s" % results["B04"])
p95 = query("histogram_quantile(0.95, sum by (le) (\n  rate(query_duration_ms_bucket[5m])\n))", at)["result"]
check(len(p95) == 1 and 0 < float(p95[0]["value"][1]) < 2000,
      "B05: the p95 the rule compares has a value below 2000 ms: %s" % p95)
now_ms = at * 1000
for ds in ("events", "ice"):
    t = value("C04", dataset=ds)
    check(start_ms <= t <= now_ms, "C04: last refresh of %s at %s, not in [%s, %s]" % (ds, t, start_ms, now_ms))
check(value("C05", dataset="events", mode="append") == events_max_ms,
      "C05: events' high-water mark, want %s" % events_max_ms)
check(value("C11", dataset="events") == events_rows, "C11: rows written to events, want %s" % events_rows)
check(value("C11", dataset="ice") == ice_rows, "C11: rows written to ice, want %s" % ice_rows)
check(value("C14", dataset="events") > 0, "C14: events' size")
check(value("C23", engine="None") == 1, "C23: federated datasets")
# Spice's numbers: 1 Ready, 3 Error; events and flaky refresh every second, and
# a scrape may find them in that refresh (4 Refreshing).
for ds, states in (("events", (1, 4)), ("fed", (1,)), ("ice", (1,)), ("flaky", (3, 4))):
    check(value("C25", dataset=ds) in states, "C25: dataset_load_state of %s, want %s" % (ds, states))
check(value("C27", method="POST", path="/v1/sql", status="400") == 6,
      "C27: six /v1/sql answers 400")
for code in ("QueryPlanningError", "ResourcesExhausted", "QueryExecutionError"):
    check(sum(float(s["value"][1]) for s in results["C34"] if s["metric"].get("err_code") == code) == 2,
          "C34: two failures %s" % code)
check(value("C34", err_code="QueryExecutionError", datasets="events", tags="error", protocol="http") == 2,
      "C34: the failure while running names the dataset it read")
check(value("C32", tags="", datasets="events,fed", protocol="http") == 2, "C32: the join, twice")
check(value("D01", dataset="ice", reason="snapshot_not_ancestor") == 1, "D01: one fallback")
check(value("D03") == 0, "D03: no rejection")

n_series = sum(1 for r in records if r["expect"] == "series")
print("  %d queries (%d with series, %d expected empty) evaluated at %.3f" %
      (len(records), n_series, len(records) - n_series, at), file=sys.stderr)
if failures:
    raise SystemExit("FAIL:\n  " + "\n  ".join(failures))
PY

# promtool reads the scrape; its only findings may be the abbreviated unit of
# the five _ms names Spice and SPEC 1.4 fix, the counters without _total, and
# Spice's gauge dataset_active_count, whose name ends in _count.
promtool check metrics < scrape.txt > promtool.txt 2>&1 || true
while IFS= read -r l; do
  [[ -z $l ]] && continue
  case "$l" in
    "dataset_acceleration_refresh_duration_ms metric names should not contain abbreviated units"* | \
      "query_duration_ms metric names should not contain abbreviated units"* | \
      "http_requests_duration_ms metric names should not contain abbreviated units"* | \
      "dataset_acceleration_last_refresh_unix_time_ms metric names should not contain abbreviated units"* | \
      "dataset_acceleration_max_timestamp_after_refresh_ms metric names should not contain abbreviated units"* | \
      "dataset_acceleration_refresh_"*" counter metrics should have \"_total\" suffix" | \
      "query_"*" counter metrics should have \"_total\" suffix" | \
      "http_requests counter metrics should have \"_total\" suffix" | \
      "dataset_active_count non-histogram and non-summary metrics should not have \"_count\" suffix") ;;
    *) cat promtool.txt >&2; fail "promtool: $l" ;;
  esac
done < promtool.txt

kill "$PROM_PID"
wait "$PROM_PID" 2>/dev/null || true
stop_server
echo ok
