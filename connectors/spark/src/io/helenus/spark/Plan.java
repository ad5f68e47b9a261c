package io.helenus.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** What a node says a table's scan reads: its columns and the ranges that cover the ring. */
final class Plan implements Serializable {
    private static final long serialVersionUID = 1L;

    /** A column: its CQL name, kind (partition_key, clustering, regular), and wire kind. */
    static final class Column implements Serializable {
        private static final long serialVersionUID = 1L;
        final String name;
        final String kind;
        final String cqlType;
        final String wire;

        Column(String name, String kind, String cqlType, String wire) {
            this.name = name;
            this.kind = kind;
            this.cqlType = cqlType;
            this.wire = wire;
        }

        DataType sparkType() {
            switch (wire) {
                case "bool": return DataTypes.BooleanType;
                case "i8": return DataTypes.ByteType;
                case "i16": return DataTypes.ShortType;
                case "i32": return DataTypes.IntegerType;
                case "date": return DataTypes.DateType;
                case "i64":
                case "time": return DataTypes.LongType;
                case "timestamp": return DataTypes.TimestampType;
                case "f32": return DataTypes.FloatType;
                case "f64": return DataTypes.DoubleType;
                case "text":
                case "uuid":
                case "inet": return DataTypes.StringType;
                default: return DataTypes.BinaryType;
            }
        }
    }

    /** Tokens (start, end] and the host that serves them: a Spark partition each. */
    static final class Range implements InputPartition {
        private static final long serialVersionUID = 1L;
        final long start;
        final long end;
        final String host;

        Range(long start, long end, String host) {
            this.start = start;
            this.end = end;
            this.host = host;
        }

        @Override
        public String[] preferredLocations() {
            return new String[] {host};
        }
    }

    final Map<String, Column> columns = new LinkedHashMap<>();
    final List<Range> ranges = new ArrayList<>();

    static Plan fetch(Options options) {
        String text = options.text(options.host, options.tablePath() + "?splits=" + options.splits);
        Plan plan = new Plan();
        for (String line : text.split("\n")) {
            String[] f = line.split("\t");
            if (f[0].equals("column") && f.length == 5) {
                plan.columns.put(f[1], new Column(f[1], f[2], f[3], f[4]));
            } else if (f[0].equals("range") && f.length == 4) {
                plan.ranges.add(new Range(Long.parseLong(f[1]), Long.parseLong(f[2]), f[3]));
            }
        }
        if (plan.columns.isEmpty() || plan.ranges.isEmpty()) {
            throw new IllegalStateException("Helenus sent no scan plan for " + options.keyspace
                    + "." + options.table + ": " + text);
        }
        return plan;
    }

    StructType schema() {
        List<StructField> fields = new ArrayList<>();
        for (Column c : columns.values()) {
            fields.add(new StructField(c.name, c.sparkType(), c.kind.equals("regular"),
                    Metadata.empty()));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }
}
