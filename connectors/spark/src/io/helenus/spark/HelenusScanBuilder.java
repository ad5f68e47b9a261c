package io.helenus.spark;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.types.StructType;

/**
 * Keeps the columns a query reads and hands the server the comparisons on regular columns it
 * can skip chunks and rows by. Spark still evaluates every filter after the scan, so a
 * comparison the server takes only narrows what is sent.
 */
final class HelenusScanBuilder implements SupportsPushDownRequiredColumns, SupportsPushDownFilters {
    private final Options options;
    private final Plan plan;
    private StructType required;
    private final List<Filter> pushed = new ArrayList<>();
    private final List<String> restrictions = new ArrayList<>();

    HelenusScanBuilder(Options options, Plan plan) {
        this.options = options;
        this.plan = plan;
        this.required = plan.schema();
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        required = requiredSchema;
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
        for (Filter f : filters) {
            String r = restriction(f);
            if (r != null) {
                pushed.add(f);
                restrictions.add(r);
            }
        }
        return filters;
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed.toArray(new Filter[0]);
    }

    @Override
    public Scan build() {
        return new HelenusScan(options, plan, required, String.join("~", restrictions));
    }

    /** {@code OP.NAME.VALUE} for a comparison the server takes; null for any other filter. */
    private String restriction(Filter f) {
        String op;
        String attribute;
        Object value;
        if (f instanceof EqualTo) {
            op = "eq"; attribute = ((EqualTo) f).attribute(); value = ((EqualTo) f).value();
        } else if (f instanceof GreaterThan) {
            op = "gt"; attribute = ((GreaterThan) f).attribute(); value = ((GreaterThan) f).value();
        } else if (f instanceof GreaterThanOrEqual) {
            op = "ge"; attribute = ((GreaterThanOrEqual) f).attribute();
            value = ((GreaterThanOrEqual) f).value();
        } else if (f instanceof LessThan) {
            op = "lt"; attribute = ((LessThan) f).attribute(); value = ((LessThan) f).value();
        } else if (f instanceof LessThanOrEqual) {
            op = "le"; attribute = ((LessThanOrEqual) f).attribute();
            value = ((LessThanOrEqual) f).value();
        } else {
            return null;
        }
        Plan.Column c = plan.columns.get(attribute);
        if (c == null || !c.kind.equals("regular") || value == null) {
            return null;
        }
        byte[] serialized = serialize(c.wire, value);
        return serialized == null ? null
                : op + "." + Options.hex(attribute) + "." + Options.hex(serialized);
    }

    /** The value as Cassandra serializes the column's type; null when it cannot be exact. */
    static byte[] serialize(String wire, Object v) {
        switch (wire) {
            case "i8": return v instanceof Byte ? new byte[] {(Byte) v} : null;
            case "i16": return v instanceof Short ? ByteBuffer.allocate(2).putShort((Short) v).array() : null;
            case "i32": return v instanceof Integer ? ByteBuffer.allocate(4).putInt((Integer) v).array() : null;
            case "i64":
            case "time": return v instanceof Long ? ByteBuffer.allocate(8).putLong((Long) v).array() : null;
            case "f32": return v instanceof Float ? ByteBuffer.allocate(4).putFloat((Float) v).array() : null;
            case "f64": return v instanceof Double ? ByteBuffer.allocate(8).putDouble((Double) v).array() : null;
            case "text": return v instanceof String ? ((String) v).getBytes(StandardCharsets.UTF_8) : null;
            case "date": {
                long days;
                if (v instanceof Date) {
                    days = ((Date) v).toLocalDate().toEpochDay();
                } else if (v instanceof LocalDate) {
                    days = ((LocalDate) v).toEpochDay();
                } else {
                    return null;
                }
                return ByteBuffer.allocate(4).putInt((int) (days + (1L << 31))).array();
            }
            case "timestamp": {
                Instant at;
                if (v instanceof Timestamp) {
                    at = ((Timestamp) v).toInstant();
                } else if (v instanceof Instant) {
                    at = (Instant) v;
                } else {
                    return null;
                }
                // Cassandra keeps milliseconds: a finer bound would be rounded, which could drop
                // rows the exact comparison keeps.
                if (at.getNano() % 1_000_000 != 0) {
                    return null;
                }
                return ByteBuffer.allocate(8).putLong(at.toEpochMilli()).array();
            }
            default: return null;
        }
    }
}
