// PgJdbc: a JDBC client of `tidemark run --pg` (test_pgwire.sh; issue 20), through
// PostgreSQL's own JDBC driver (Debian libpostgresql-jdbc-java): connects with a
// password (the API key), lists tables and columns through DatabaseMetaData, runs a
// PreparedStatement with parameters more times than the driver's prepareThreshold
// (so that it switches to a named server statement and binary results), and reads
// typed values. Prints one `key=value` line per fact, which the test compares.
//
// Usage: java -cp postgresql.jar:DIR PgJdbc HOST PORT PASSWORD
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Properties;

public final class PgJdbc {
  private PgJdbc() {}

  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/tidemark";
    Properties p = new Properties();
    p.setProperty("user", "jdbc");
    p.setProperty("password", args[2]);
    p.setProperty("ApplicationName", "PgJdbc");
    try (Connection c = DriverManager.getConnection(url, p)) {
      DatabaseMetaData md = c.getMetaData();
      System.out.println("product=" + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
      try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE", "VIEW"})) {
        while (rs.next()) {
          System.out.println("table=" + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME")
              + " " + rs.getString("TABLE_TYPE"));
        }
      }
      try (ResultSet rs = md.getColumns(null, "public", "events", "%")) {
        while (rs.next()) {
          System.out.println("column=" + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME")
              + " " + rs.getInt("DATA_TYPE") + " " + rs.getInt("ORDINAL_POSITION"));
        }
      }
      try (PreparedStatement ps = c.prepareStatement(
          "SELECT id, v, x, ok FROM events WHERE id = ? AND v = ? AND x > ?")) {
        for (int i = 1; i <= 7; i++) {
          ps.setLong(1, i * 7);
          ps.setString(2, "v" + (i * 7));
          ps.setDouble(3, 0.5);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              System.out.println("row=" + rs.getLong(1) + " " + rs.getString(2) + " " + rs.getDouble(3)
                  + " " + rs.getBoolean(4));
            }
          }
        }
      }
      String typed = "SELECT 1::INTEGER AS i, 9000000000::BIGINT AS b, 1.25::DOUBLE AS d, "
          + "12.34::DECIMAL(10,2) AS n, 'text é' AS t, TIMESTAMP '2024-01-02 03:04:05.5' AS ts, "
          + "TIMESTAMPTZ '2024-01-02 03:04:05+00' AS tz, DATE '2024-01-02' AS dt, true AS bo, "
          + "'\\x01\\xFF'::BLOB AS by, NULL::INTEGER AS nu, ? AS par";
      for (int round = 0; round < 6; round++) {
        try (PreparedStatement ps = c.prepareStatement(typed)) {
          ps.setBigDecimal(1, new BigDecimal("5.50"));
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            if (round != 0 && round != 5) continue;
            System.out.println("int=" + rs.getInt("i"));
            System.out.println("bigint=" + rs.getLong("b"));
            System.out.println("double=" + rs.getDouble("d"));
            System.out.println("numeric=" + rs.getBigDecimal("n"));
            System.out.println("text=" + rs.getString("t"));
            System.out.println("timestamp=" + rs.getTimestamp("ts").toLocalDateTime());
            System.out.println("timestamptz=" + rs.getObject("tz", OffsetDateTime.class)
                .withOffsetSameInstant(ZoneOffset.UTC));
            System.out.println("date=" + rs.getDate("dt").toLocalDate());
            System.out.println("boolean=" + rs.getBoolean("bo"));
            byte[] by = rs.getBytes("by");
            System.out.println("bytea=" + by.length + " " + (by[0] & 0xff) + " " + (by[1] & 0xff));
            Object nu = rs.getObject("nu");
            System.out.println("null=" + (nu == null) + " " + rs.wasNull());
            System.out.println("param=" + rs.getString("par"));
          }
        }
      }
      try (Statement st = c.createStatement()) {
        try {
          st.executeQuery("DELETE FROM events");
          System.out.println("write=accepted");
        } catch (java.sql.SQLException e) {
          System.out.println("write=" + e.getSQLState());
        }
      }
    }
  }
}
