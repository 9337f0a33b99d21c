# The recipe's users table (email is the primary key), then changed plans.
setup() {
  mkdir -p users
  write_parquet users/a.parquet "
    SELECT i AS id, 'user' || i || '@example.com' AS email,
           CASE WHEN i % 3 = 0 THEN 'pro' ELSE 'free' END AS plan,
           TIMESTAMP '2024-06-01 00:00:00' + to_minutes(i::INTEGER) AS updated_at
    FROM range(1, 101) t(i)"
}
# Five users change plan and one signs up, all later than every row so far.
plan_changes() {
  write_parquet users/b.parquet "
    SELECT i AS id, 'user' || i || '@example.com' AS email, 'enterprise' AS plan,
           TIMESTAMP '2024-07-01 00:00:00' + to_minutes(i::INTEGER) AS updated_at
    FROM (SELECT unnest([3, 10, 20, 50, 99, 101])::BIGINT AS i)"
}
