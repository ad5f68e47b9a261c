package io.helenus.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

final class HelenusTable implements SupportsRead {
    private final Options options;
    private final Plan plan;

    HelenusTable(Options options, Plan plan) {
        this.options = options;
        this.plan = plan;
    }

    @Override
    public String name() {
        return options.keyspace + "." + options.table;
    }

    @Override
    public StructType schema() {
        return plan.schema();
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap unused) {
        return new HelenusScanBuilder(options, plan);
    }
}
