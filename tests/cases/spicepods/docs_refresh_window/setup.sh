# Cities with created_at over the last four days, hour by hour (no row within
# two hours of the one-day window's edge).
setup() {
  write_parquet my_dataset.parquet "
    SELECT i AS id, ['Seattle', 'Portland', 'Bellevue'][i % 3 + 1] AS city,
           (now() AT TIME ZONE 'UTC') - to_hours(CASE WHEN i // 3 BETWEEN 22 AND 26 THEN i // 3 + 8 ELSE i // 3 END) AS created_at,
           i * 10 AS amount
    FROM range(0, 288) t(i)"
}
