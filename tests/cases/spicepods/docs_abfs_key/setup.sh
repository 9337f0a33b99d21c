setup() {
  printf 'trip_id,vendor,passengers,fare\n' > taxi_sample.csv
  for i in $(seq 1 120); do printf '%d,V%d,%d,%d.%02d\n' "$i" $((i % 3)) $((i % 5)) $((5 + i % 40)) $((i % 100)); done >> taxi_sample.csv
  az mkcontainer foocontainer >/dev/null
  az put foocontainer taxi_sample.csv taxi_sample.csv >/dev/null
}
