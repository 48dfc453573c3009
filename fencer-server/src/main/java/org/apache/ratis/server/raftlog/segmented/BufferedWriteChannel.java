package org.apache.ratis.server.raftlog.segmented;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.ratis.util.FileUtils;
import org.apache.ratis.util.Preconditions;
import org.apache.ratis.util.function.CheckedBiFunction;
import org.apache.ratis.util.function.CheckedConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fencer's replacement for Ratis 3.3.0's class of this name (Apache License 2.0): the buffered channel a Raft log
 * segment is appended through. It does what Ratis's does, call for call, except that it remembers the file's size
 * ({@code knownSizeBytes}) instead of asking the file system for it before every appended entry.
 *
 * <p>Why: Ratis's version calls {@link FileChannel#size()}, an {@code fstat}, each time an entry is added. Since Linux
 * 6.13 a file system with fine-grained timestamps (ext4 among them) stamps the next write after such a query
 * with a new, full-resolution modification time, so every append changes the inode; on ext4 without a journal the
 * {@code fdatasync} that makes the entry durable then writes the inode as well: two block writes per commit instead
 * of one. Measured on one such machine: a 120-byte write and {@code fdatasync} takes 138 µs at the median alone and
 * 191–202 µs with an {@code fstat} before each write; the server issued 3.0 block requests per {@code fdatasync}
 * with Ratis's class and 2.2 with this one. The file's size changes only through this channel's own writes and the
 * preallocation it asks for, so remembering it is exact; if it were ever wrong the only effect would be one
 * preallocation too many or too few, never the bytes written. Fencer's {@code LogChannelCheck} warns
 * when Ratis's own class is loaded instead (a class path that lists ratis-server before fencer-server).
 *
 * <p>Written for Ratis {@value #WRITTEN_FOR_RATIS}; a test fails when the Ratis on the class path is another
 * version, so that an upgrade looks at this class again.
 */
class BufferedWriteChannel implements Closeable {
    static final Logger LOG = LoggerFactory.getLogger(BufferedWriteChannel.class);
    /** The Ratis release whose class of this name this one replaces. */
    static final String WRITTEN_FOR_RATIS = "3.3.0";

    private final String name;
    private final FileChannel fileChannel;
    private final ByteBuffer writeBuffer;
    private boolean forced = true;
    private final AtomicReference<CompletableFuture<Void>> flushFuture =
            new AtomicReference<>(CompletableFuture.completedFuture(null));
    /** The file's size as of this channel's last write or preallocation; only the log worker's thread uses it. */
    private long knownSizeBytes;

    static BufferedWriteChannel open(File file, boolean append, ByteBuffer buffer) throws IOException {
        FileChannel fc = FileUtils.newFileChannel(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        long length = file.length();
        if (append) {
            fc.position(length);
            Preconditions.assertSame(length, fc.size(), "fc.size");
        } else {
            if (length > 0) {
                fc.truncate(0);
            }
            Preconditions.assertSame(0, fc.size(), "fc.size");
        }
        long size = fc.size();
        Preconditions.assertSame(size, fc.position(), "fc.position");
        String name = file.getName() + (append ? " (append)" : "");
        LOG.info("open {} at position {}", name, fc.position());
        BufferedWriteChannel channel = new BufferedWriteChannel(name, fc, buffer);
        channel.knownSizeBytes = size;
        return channel;
    }

    BufferedWriteChannel(String name, FileChannel fileChannel, ByteBuffer byteBuffer) {
        this.name = name;
        this.fileChannel = fileChannel;
        this.writeBuffer = byteBuffer;
    }

    int writeBufferPosition() {
        return writeBuffer.position();
    }

    void writeToBuffer(int writeSize, CheckedConsumer<ByteBuffer, IOException> bufferConsumer) throws IOException {
        if (writeSize > writeBuffer.capacity()) {
            throw new IOException("writeSize = " + writeSize + " > writeBuffer.capacity() = " + writeBuffer.capacity());
        }
        if (writeSize > writeBuffer.remaining()) {
            flushBuffer();
        }
        int pos = writeBufferPosition();
        int lim = writeBuffer.limit();
        bufferConsumer.accept(writeBuffer);
        Preconditions.assertSame(writeSize, writeBufferPosition() - pos, "written");
        Preconditions.assertSame(lim, writeBuffer.limit(), "writeBuffer.limit()");
    }

    void writeToChannel(ByteBuffer buffer) throws IOException {
        Preconditions.assertSame(0, writeBufferPosition(), "writeBuffer.position()");
        int length = buffer.remaining();
        if (LOG.isDebugEnabled()) {
            LOG.debug("Write {} bytes (pos={}, size={}) to channel {}", length, fileChannel.position(),
                    fileChannel.size(), this);
        }
        int written = 0;
        while (written < length) {
            written += fileChannel.write(buffer);
        }
        Preconditions.assertSame(length, written, "written");
        knownSizeBytes = Math.max(knownSizeBytes, fileChannel.position());
        forced = false;
    }

    /** Asks {@code preallocate} for room when the buffered bytes and {@code size} more would pass the file's end. */
    void preallocateIfNecessary(long size, CheckedBiFunction<FileChannel, Long, Long, IOException> preallocate)
            throws IOException {
        long outstanding = writeBufferPosition() + size;
        if (fileChannel.position() + outstanding > knownSizeBytes) {
            preallocate.apply(fileChannel, outstanding);
            knownSizeBytes = fileChannel.size(); // one fstat per preallocation, not per entry
        }
    }

    void flush() throws IOException {
        flushBuffer();
        if (!forced) {
            fileChannel.force(false);
            forced = true;
        }
    }

    CompletableFuture<Void> asyncFlush(ExecutorService executor) throws IOException {
        flushBuffer();
        if (forced) {
            return flushFuture.get();
        }
        CompletableFuture<Void> f = CompletableFuture.supplyAsync(this::fileChannelForce, executor);
        forced = true;
        return flushFuture.updateAndGet(previous -> f.thenCombine(previous, (current, before) -> current));
    }

    private Void fileChannelForce() {
        try {
            fileChannel.force(false);
        } catch (IOException e) {
            throw new CompletionException("Failed to force channel " + this, e);
        }
        return null;
    }

    private void flushBuffer() throws IOException {
        if (writeBufferPosition() == 0) {
            return;
        }
        writeBuffer.flip();
        writeToChannel(writeBuffer);
        writeBuffer.clear();
        forced = false;
    }

    boolean isOpen() {
        return fileChannel.isOpen();
    }

    @Override
    public void close() throws IOException {
        if (!isOpen()) {
            return;
        }
        try {
            flushFuture.get().join();
            fileChannel.truncate(fileChannel.position());
        } finally {
            fileChannel.close();
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
