package helenus;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/**
 * Real-client check with the Java driver 4.x: the driver reads system.local, system.peers_v2 and
 * the schema tables at connect, so connecting at all proves those are served. Exits 1 on failure.
 */
public final class ClientCheck {
  private static final String KS = "helenus_clients_java";

  private static void check(boolean ok, String what) {
    if (!ok) {
      System.out.println("FAIL " + what);
      System.exit(1);
    }
    System.out.println("ok   " + what);
  }

  public static void main(String[] args) {
    String host = System.getenv().getOrDefault("HELENUS_HOST", "127.0.0.1");
    int port = Integer.parseInt(System.getenv().getOrDefault("HELENUS_PORT", "9042"));
    DriverConfigLoader config =
        DriverConfigLoader.programmaticBuilder()
            .withDuration(DefaultDriverOption.CONNECTION_CONNECT_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(20))
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_AGREEMENT_TIMEOUT, Duration.ofSeconds(20))
            // Infers the local DC from the contact point, so no DC name is hard-coded here.
            .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
            .build();
    try (CqlSession session =
        CqlSession.builder()
            .addContactPoint(new InetSocketAddress(host, port))
            .withConfigLoader(config)
            .build()) {
      System.out.println(
          "ok   connected; negotiated protocol "
              + session.getContext().getProtocolVersion()
              + ", nodes "
              + session.getMetadata().getNodes().size());
      Row local = session.execute("SELECT release_version, cluster_name FROM system.local").one();
      check(local != null, "system.local release_version " + (local == null ? "" : local.getString(0)));
      // The driver's default schema filter hides system keyspaces, so schema loading is checked
      // on the test keyspace below; system_schema was still read at connect.

      session.execute("DROP KEYSPACE IF EXISTS " + KS);
      session.execute(
          "CREATE KEYSPACE " + KS
              + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
      session.execute(
          "CREATE TABLE " + KS + ".events (day text, seq int, id uuid, payload blob, score double,"
              + " labels list<text>, PRIMARY KEY (day, seq)) WITH CLUSTERING ORDER BY (seq DESC)");
      check(session.checkSchemaAgreement(), "schema agreement after CREATE TABLE");
      TableMetadata table =
          session.getMetadata().getKeyspace(KS).flatMap(k -> k.getTable("events")).orElse(null);
      check(table != null, "driver metadata sees the new table (SCHEMA_CHANGE + refresh)");
      check(table.getPartitionKey().size() == 1
          && table.getPartitionKey().get(0).getName().asInternal().equals("day"), "partition key is day");
      check(table.getClusteringColumns().size() == 1, "one clustering column");

      PreparedStatement ins = session.prepare(
          "INSERT INTO " + KS + ".events (day, seq, id, payload, score, labels) VALUES (?, ?, ?, ?, ?, ?)");
      UUID[] ids = new UUID[100];
      for (int i = 0; i < 100; i++) {
        ids[i] = UUID.randomUUID();
        BoundStatement b = ins.bind("d" + (i % 4), i, ids[i],
            java.nio.ByteBuffer.wrap(new byte[] {(byte) i, 1, 2}), i * 1.5, List.of("x", "y" + i));
        session.execute(b);
      }
      check(true, "100 prepared inserts");
      PreparedStatement sel = session.prepare(
          "SELECT id, payload, score, labels FROM " + KS + ".events WHERE day = ? AND seq = ?");
      for (int i = 0; i < 100; i += 7) {
        Row r = session.execute(sel.bind("d" + (i % 4), i)).one();
        check(r != null && r.getUuid("id").equals(ids[i]) && r.getDouble("score") == i * 1.5
            && r.getByteBuffer("payload").get(0) == (byte) i
            && r.getList("labels", String.class).equals(List.of("x", "y" + i)),
            "prepared select seq=" + i);
      }
      ResultSet rs = session.execute(
          SimpleStatement.newInstance("SELECT seq FROM " + KS + ".events WHERE day = ?", "d1")
              .setPageSize(5));
      int n = 0;
      int prev = Integer.MAX_VALUE;
      boolean descending = true;
      for (Row r : rs) {
        descending &= r.getInt(0) < prev;
        prev = r.getInt(0);
        n++;
      }
      check(n == 25 && descending, "paged partition read: " + n + " rows in DESC order");
      session.execute("DROP KEYSPACE " + KS);
      System.out.println("java suite: all checks passed");
    } catch (RuntimeException e) {
      System.out.println("FAIL " + e);
      System.exit(1);
    }
    System.exit(0);
  }
}
