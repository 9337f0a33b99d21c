setup() {
  mkdir -p taxi_trips
  cp "$DATA"/taxi/*.parquet taxi_trips/
}
