package org.apache.ratis.server.raftlog.segmented;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ratis.util.function.CheckedBiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fencer's replacement of Ratis's log segment channel: it asks the file system for the file's size only after a
 * preallocation, and still preallocates exactly when the file is too short, as Ratis's class does.
 */
class BufferedWriteChannelTest {
    private static final int BUFFER_BYTES = 1_024;

    @TempDir
    Path directory;

    @Test
    void append_withinThePreallocatedFile_asksTheSizeOnlyAfterEachPreallocation() throws IOException {
        Path file = directory.resolve("log_inprogress_0");
        CountingChannel counted = new CountingChannel(open(file));
        BufferedWriteChannel channel = new BufferedWriteChannel("test", counted, ByteBuffer.allocate(BUFFER_BYTES));
        AtomicInteger preallocations = new AtomicInteger();
        ByteArrayOutputStream expected = new ByteArrayOutputStream();

        for (int i = 0; i < 500; i++) {
            byte[] entry = entry(i, 100);
            channel.preallocateIfNecessary(entry.length, (fc, outstanding) -> {
                preallocations.incrementAndGet();
                return zeros(fc, 4_096);
            });
            channel.writeToBuffer(entry.length, buffer -> buffer.put(entry));
            channel.flush();
            expected.write(entry);
        }
        channel.close();

        assertThat(preallocations.get()).as("one per 4 KiB of the 50,000 bytes appended").isEqualTo(13);
        assertThat(counted.sizeCalls).as("fstat calls: the preallocation's own (as Ratis's asks) and one after it,"
                + " none per entry").isEqualTo(2 * preallocations.get());
        assertThat(Files.readAllBytes(file)).as("the file as closed: the entries, the zeros truncated")
                .isEqualTo(expected.toByteArray());
    }

    @Test
    void preallocateIfNecessary_anyEntriesAndRoom_preallocatesExactlyWhenTheFileIsTooShort() throws IOException {
        Path file = directory.resolve("log_inprogress_1");
        FileChannel fc = open(file);
        BufferedWriteChannel channel = new BufferedWriteChannel("test", fc, ByteBuffer.allocate(BUFFER_BYTES));
        Random random = new Random(20261205);
        int asked = 0;

        for (int i = 0; i < 2_000; i++) {
            byte[] entry = entry(i, 1 + random.nextInt(BUFFER_BYTES));
            // What Ratis's own class decides, from the file system's answer.
            boolean tooShort = fc.position() + channel.writeBufferPosition() + entry.length > Files.size(file);
            // Sometimes the preallocation adds nothing, so the write itself must grow the file.
            int room = random.nextInt(3) == 0 ? 0 : entry.length + random.nextInt(8_192);
            AtomicInteger calls = new AtomicInteger();
            channel.preallocateIfNecessary(entry.length, (c, outstanding) -> {
                calls.incrementAndGet();
                return zeros(c, room);
            });
            assertThat(calls.get()).as("preallocations asked for entry %d", i).isEqualTo(tooShort ? 1 : 0);
            asked += calls.get();
            channel.writeToBuffer(entry.length, buffer -> buffer.put(entry));
            if (random.nextInt(4) == 0) {
                channel.flush();
            }
        }
        channel.close();

        assertThat(asked).as("the run asked for room at least once (the check above was exercised)")
                .isGreaterThan(100);
    }

    @Test
    void ratisOnTheClassPath_isTheReleaseThisChannelWasWrittenFor() throws IOException {
        Properties ratis = new Properties();
        try (InputStream in = BufferedWriteChannelTest.class.getResourceAsStream(
                "/META-INF/maven/org.apache.ratis/ratis-server/pom.properties")) {
            assertThat(in).as("ratis-server's build description").isNotNull();
            ratis.load(in);
        }
        // On an upgrade: compare Ratis's new class of this name with this one before changing the constant.
        assertThat(ratis.getProperty("version")).isEqualTo(BufferedWriteChannel.WRITTEN_FOR_RATIS);
    }

    private static FileChannel open(Path file) throws IOException {
        return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
    }

    private static byte[] entry(int index, int length) {
        byte[] bytes = new byte[length];
        Arrays.fill(bytes, (byte) ('a' + index % 26));
        return bytes;
    }

    /** Adds {@code bytes} zeros at the file's end with positional writes, as Ratis's preallocation does. */
    private static Long zeros(FileChannel fc, int bytes) {
        try {
            long size = fc.size();
            ByteBuffer fill = ByteBuffer.allocate(bytes);
            while (fill.hasRemaining()) {
                fc.write(fill, size + fill.position());
            }
            return (long) bytes;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A file channel that counts the size queries (each an fstat) it passes to the real one. */
    private static final class CountingChannel extends FileChannel {
        private final FileChannel real;
        int sizeCalls;

        CountingChannel(FileChannel real) {
            this.real = real;
        }

        @Override
        public long size() throws IOException {
            sizeCalls++;
            return real.size();
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            return real.read(dst);
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
            return real.read(dsts, offset, length);
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            return real.write(src);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            return real.write(srcs, offset, length);
        }

        @Override
        public long position() throws IOException {
            return real.position();
        }

        @Override
        public FileChannel position(long newPosition) throws IOException {
            real.position(newPosition);
            return this;
        }

        @Override
        public FileChannel truncate(long size) throws IOException {
            real.truncate(size);
            return this;
        }

        @Override
        public void force(boolean metaData) throws IOException {
            real.force(metaData);
        }

        @Override
        public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
            return real.transferTo(position, count, target);
        }

        @Override
        public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
            return real.transferFrom(src, position, count);
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            return real.read(dst, position);
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            return real.write(src, position);
        }

        @Override
        public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
            return real.map(mode, position, size);
        }

        @Override
        public FileLock lock(long position, long size, boolean shared) throws IOException {
            return real.lock(position, size, shared);
        }

        @Override
        public FileLock tryLock(long position, long size, boolean shared) throws IOException {
            return real.tryLock(position, size, shared);
        }

        @Override
        protected void implCloseChannel() throws IOException {
            real.close();
        }
    }
}
