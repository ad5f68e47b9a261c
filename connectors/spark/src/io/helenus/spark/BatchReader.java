package io.helenus.spark;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one range's column-scan stream (the server's admin/column_scan/wire.rs) into Spark's
 * column vectors: fixed-width values are little-endian and copied a vector at a time.
 */
final class BatchReader implements PartitionReader<ColumnarBatch> {
    private static final byte[] MAGIC = "HCS1".getBytes(StandardCharsets.US_ASCII);
    private static final int FRAME_END = 0;
    private static final int FRAME_BATCH = 1;
    private static final int FRAME_ERROR = 2;

    private final String host;
    private final DataInputStream in;
    private final StructType schema;
    private final String[] wires;
    private OnHeapColumnVector[] vectors;
    private int capacity;
    private ColumnarBatch batch;
    private byte[] buf = new byte[0];
    private ByteBuffer le = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);

    BatchReader(Options options, String host, String query, StructType schema, List<String> wires) {
        this.host = host;
        this.schema = schema;
        this.wires = wires.toArray(new String[0]);
        try {
            this.in = new DataInputStream(new BufferedInputStream(options.get(host, query), 1 << 16));
            byte[] magic = new byte[MAGIC.length];
            in.readFully(magic);
            if (!Arrays.equals(magic, MAGIC)) {
                throw new IOException("not a Helenus column-scan stream from " + host);
            }
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    @Override
    public boolean next() throws IOException {
        int kind;
        try {
            kind = in.readUnsignedByte();
        } catch (EOFException e) {
            throw new IOException("the column scan from " + host + " ended before its last frame");
        }
        switch (kind) {
            case FRAME_END:
                in.readFully(new byte[8]);
                return false;
            case FRAME_ERROR: {
                byte[] message = new byte[Integer.reverseBytes(in.readInt())];
                in.readFully(message);
                throw new IOException("the column scan on " + host + " failed: "
                        + new String(message, StandardCharsets.UTF_8));
            }
            case FRAME_BATCH: {
                int len = Integer.reverseBytes(in.readInt());
                if (buf.length < len) {
                    buf = new byte[Math.max(len, buf.length * 2)];
                    le = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
                }
                in.readFully(buf, 0, len);
                decode();
                return true;
            }
            default:
                throw new IOException("unknown frame " + kind + " in the column scan from " + host);
        }
    }

    private void decode() {
        int rows = le.getInt(0);
        if (vectors == null || rows > capacity) {
            if (vectors != null) {
                for (OnHeapColumnVector v : vectors) {
                    v.close();
                }
            }
            capacity = Math.max(rows, 4096);
            vectors = OnHeapColumnVector.allocateColumns(capacity, schema);
            batch = new ColumnarBatch(vectors.clone(), 0);
        }
        int at = 4;
        for (int c = 0; c < vectors.length; c++) {
            OnHeapColumnVector v = vectors[c];
            v.reset();
            at = column(v, wires[c], rows, at);
        }
        batch.setNumRows(rows);
    }

    /** Decodes one column at {@code at}; the offset after it. */
    private int column(OnHeapColumnVector v, String wire, int rows, int at) {
        boolean hasNulls = buf[at++] != 0;
        int validity = at;
        if (hasNulls) {
            for (int i = 0; i < rows; i++) {
                if ((buf[validity + (i >> 3)] & (1 << (i & 7))) == 0) {
                    v.putNull(i);
                }
            }
            at += (rows + 7) >> 3;
        }
        switch (wire) {
            case "bool":
                for (int i = 0; i < rows; i++) {
                    v.putBoolean(i, buf[at + i] != 0);
                }
                return at + rows;
            case "i8":
                v.putBytes(0, rows, buf, at);
                return at + rows;
            case "i16":
                for (int i = 0; i < rows; i++) {
                    v.putShort(i, le.getShort(at + 2 * i));
                }
                return at + 2 * rows;
            case "i32":
            case "date":
                v.putIntsLittleEndian(0, rows, buf, at);
                return at + 4 * rows;
            case "i64":
            case "time":
            case "timestamp":
                v.putLongsLittleEndian(0, rows, buf, at);
                return at + 8 * rows;
            case "f32":
                v.putFloatsLittleEndian(0, rows, buf, at);
                return at + 4 * rows;
            case "f64":
                v.putDoublesLittleEndian(0, rows, buf, at);
                return at + 8 * rows;
            default:
                return variable(v, wire, rows, at, hasNulls, validity);
        }
    }

    private int variable(OnHeapColumnVector v, String wire, int rows, int at, boolean hasNulls,
            int validity) {
        int data = at + 4 * (rows + 1);
        for (int i = 0; i < rows; i++) {
            if (hasNulls && (buf[validity + (i >> 3)] & (1 << (i & 7))) == 0) {
                continue;
            }
            int start = le.getInt(at + 4 * i);
            int end = le.getInt(at + 4 * i + 4);
            switch (wire) {
                case "uuid":
                    if (end - start == 16) {
                        ByteBuffer b = ByteBuffer.wrap(buf, data + start, 16);
                        put(v, i, new UUID(b.getLong(), b.getLong()).toString());
                    } else {
                        put(v, i, "");
                    }
                    break;
                case "inet":
                    put(v, i, inet(Arrays.copyOfRange(buf, data + start, data + end)));
                    break;
                default:
                    v.putByteArray(i, buf, data + start, end - start);
            }
        }
        return data + le.getInt(at + 4 * rows);
    }

    private static void put(OnHeapColumnVector v, int row, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        v.putByteArray(row, b, 0, b.length);
    }

    private static String inet(byte[] address) {
        try {
            return InetAddress.getByAddress(address).getHostAddress();
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() throws IOException {
        in.close();
        if (batch != null) {
            batch.close();
        }
    }
}
