package io.helenus.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("helenus").option("keyspace", KS).option("table", T).load()}: a
 * columnar Helenus table read as column vectors over the node's column-scan API, as Spark reads
 * Parquet. Options: {@code host} (a node's admin address, 127.0.0.1), {@code port} (10000),
 * {@code splits} (at least this many partitions; Spark's default parallelism), {@code user} and
 * {@code password} (when the admin API asks for credentials), {@code https} (true when the node
 * serves it over TLS), {@code read_timeout_ms} (600000).
 */
public final class HelenusSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "helenus";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return Plan.fetch(Options.of(options)).schema();
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        Options options = Options.of(properties);
        return new HelenusTable(options, Plan.fetch(options));
    }
}
