#!/usr/bin/env python3
"""Replays what Grafana's PostgreSQL data source sends (grafana/grafana:
pkg/tsdb/grafana-postgresql-datasource, postgresMetaQuery.ts; issue 20):
"Save & test" (pgx's Ping, "-- ping"), the query builder's version,
TimescaleDB, schema, table and column queries, and time-series queries with
the macros expanded as macros.go expands them. psycopg2, password auth.
Prints one line per query: its name and the rows. Usage: PORT PASSWORD"""
import sys
import psycopg2

SCHEMA_CONSTRAINT = """
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )"""
QUERIES = [
    ("ping", "-- ping"),
    ("version", "SELECT current_setting('server_version_num')::int/100 as version"),
    ("timescaledb", "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'"),
    ("schemas", """SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name"""),
    ("tables", """SELECT
    CASE WHEN %s
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN %s THEN 0 ELSE 1 END, 1""" % (SCHEMA_CONSTRAINT, SCHEMA_CONSTRAINT)),
    ("tables of public", """SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1"""),
    ("columns", """SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('events'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('events'))[1]
          AND quote_ident(table_name) = (parse_ident('events'))[2]
        ELSE quote_ident(table_name) = 'events'
          AND %s
      END""" % SCHEMA_CONSTRAINT),
    # $__timeGroupAlias(ts, '10d'), $__timeFilter(ts) over 2024-01-01 .. 2024-01-31.
    ("timeseries", """SELECT floor(extract(epoch from ts)/864000)*864000 AS "time", count(*) AS n, avg(x) AS x
FROM events
WHERE ts BETWEEN '2024-01-01T00:00:00Z' AND '2024-01-31T00:00:00Z'
GROUP BY 1
ORDER BY 1"""),
    # $__time(ts), $__timeEpoch(ts), $__timeFrom(), $__timeTo().
    ("time macros", """SELECT ts AS "time", extract(epoch from ts) as "time_epoch", v AS metric
FROM events
WHERE ts >= '2024-01-02T00:00:00Z' AND ts < '2024-01-04T00:00:00Z'
ORDER BY 1"""),
    # $__unixEpochFilter / $__unixEpochGroupAlias over an epoch column.
    ("unix epoch", """SELECT floor((e)/864000)*864000 AS "time", count(*) AS n
FROM (SELECT extract(epoch from ts)::bigint AS e FROM events) t
WHERE e >= 1704067200 AND e <= 1706659200
GROUP BY 1 ORDER BY 1"""),
]


def main():
    c = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[1]), user="grafana",
                         password=sys.argv[2], dbname="tidemark")
    c.autocommit = True
    cur = c.cursor()
    for name, sql in QUERIES:
        try:
            cur.execute(sql)
            rows = cur.fetchall() if cur.description else []
            print(name, [tuple(str(v) for v in r) for r in rows])
        except psycopg2.ProgrammingError as e:
            # psycopg2 reports the server's EmptyQueryResponse (pgx's Ping is content with it)
            print(name, "empty" if "empty query" in str(e) else "ERROR %s" % e)
        except psycopg2.Error as e:
            print(name, "ERROR", e.pgcode, str(e).splitlines()[0])


main()
