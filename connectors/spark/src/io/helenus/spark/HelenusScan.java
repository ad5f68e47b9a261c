package io.helenus.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** One Spark partition per plan range, read on (preferably) the node that holds it. */
final class HelenusScan implements Scan, Batch {
    private final Options options;
    private final Plan plan;
    private final StructType required;
    private final String restrictions;

    HelenusScan(Options options, Plan plan, StructType required, String restrictions) {
        this.options = options;
        this.plan = plan;
        this.required = required;
        this.restrictions = restrictions;
    }

    @Override
    public StructType readSchema() {
        return required;
    }

    @Override
    public String description() {
        return "helenus " + options.keyspace + "." + options.table
                + (restrictions.isEmpty() ? "" : " where " + restrictions);
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        return plan.ranges.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        List<String> wires = new ArrayList<>();
        StringBuilder names = new StringBuilder();
        for (StructField f : required.fields()) {
            wires.add(plan.columns.get(f.name()).wire);
            if (names.length() > 0) {
                names.append('.');
            }
            names.append(Options.hex(f.name()));
        }
        return new Factory(options, required, wires, names.toString(), restrictions);
    }

    static final class Factory implements PartitionReaderFactory, Serializable {
        private static final long serialVersionUID = 1L;
        private final Options options;
        private final StructType schema;
        private final List<String> wires;
        private final String columns;
        private final String restrictions;

        Factory(Options options, StructType schema, List<String> wires, String columns, String restrictions) {
            this.options = options;
            this.schema = schema;
            this.wires = wires;
            this.columns = columns;
            this.restrictions = restrictions;
        }

        @Override
        public boolean supportColumnarReads(InputPartition partition) {
            return true;
        }

        @Override
        public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
            Plan.Range p = (Plan.Range) partition;
            String query = options.tablePath() + "/data?start=" + p.start + "&end=" + p.end
                    + "&columns=" + columns + "&where=" + restrictions;
            return new BatchReader(options, p.host, query, schema, wires);
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            throw new UnsupportedOperationException("the helenus source reads column batches");
        }
    }
}
