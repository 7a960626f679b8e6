import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.RecordBatch;

/** Writes record batches (magic v2) built by the Kafka Java client's MemoryRecordsBuilder. */
public class Gen {
    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static void write(String name, MemoryRecords records) throws Exception {
        ByteBuffer buf = records.buffer();
        byte[] out = new byte[buf.remaining()];
        buf.get(out);
        try (FileOutputStream f = new FileOutputStream(name)) { f.write(out); }
    }

    static Compression codec(String name) {
        switch (name) {
            case "none": return Compression.NONE;
            case "gzip": return Compression.gzip().build();
            case "snappy": return Compression.snappy().build();
            case "lz4": return Compression.lz4().build();
            default: return Compression.zstd().build();
        }
    }

    public static void main(String[] args) throws Exception {
        long t = 1700000000000L;
        for (String name : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
            MemoryRecordsBuilder builder = MemoryRecords.builder(ByteBuffer.allocate(1 << 20),
                RecordBatch.MAGIC_VALUE_V2, codec(name), TimestampType.CREATE_TIME,
                42L, RecordBatch.NO_TIMESTAMP, 1234L, (short) 5, 7, false, 3);
            builder.appendWithOffset(42L, t, b("k0"), b("v0"), new Header[] {
                new RecordHeader("h1", b("a")), new RecordHeader("h1", b("b")),
                new RecordHeader("h2", null), new RecordHeader("clé", new byte[0])});
            builder.appendWithOffset(43L, t - 5000L, null, b("value without key"));
            builder.appendWithOffset(44L, t + 123456789L, b("k2"), null);
            StringBuilder text = new StringBuilder();
            for (int i = 0; text.length() < 2000; i++) text.append("line ").append(i).append('\n');
            builder.appendWithOffset(46L, t + 1L, b(""), b(text.toString()));
            write("records-" + name + ".bin", builder.build());

            if (!name.equals("none")) {
                MemoryRecordsBuilder big = MemoryRecords.builder(ByteBuffer.allocate(1 << 20),
                    RecordBatch.MAGIC_VALUE_V2, codec(name), TimestampType.CREATE_TIME,
                    0L, RecordBatch.NO_TIMESTAMP, RecordBatch.NO_PRODUCER_ID,
                    RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false,
                    RecordBatch.NO_PARTITION_LEADER_EPOCH);
                StringBuilder large = new StringBuilder();
                for (int i = 0; large.length() < 70000; i++) large.append("record ").append(i % 100).append(", ");
                big.appendWithOffset(0L, t, b("big"), b(large.toString().substring(0, 70000)));
                big.appendWithOffset(1L, t, b("small"), b("x"));
                write("big-" + name + ".bin", big.build());
            }
        }
        MemoryRecordsBuilder txn = MemoryRecords.builder(ByteBuffer.allocate(1 << 16),
            RecordBatch.MAGIC_VALUE_V2, Compression.NONE, TimestampType.CREATE_TIME,
            100L, RecordBatch.NO_TIMESTAMP, 9000L, (short) 1, 0, true, 3);
        txn.appendWithOffset(100L, t, b("tk"), b("tv"));
        write("transactional.bin", txn.build());
        write("control-commit.bin", MemoryRecords.withEndTransactionMarker(101L, t + 10L, 3, 9000L,
            (short) 1, new EndTransactionMarker(ControlRecordType.COMMIT, 17)));
    }
}
