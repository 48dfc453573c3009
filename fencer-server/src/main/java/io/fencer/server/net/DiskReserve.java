package io.fencer.server.net;

import io.fencer.core.LimitExceededException;
import io.fencer.core.Ticker;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The free space a data directory keeps: writes that need space are refused, RESOURCE_EXHAUSTED naming the
 * directory, before its file system fills, and served again by themselves once space is freed.
 *
 * <p>Why before, and not on the write's own failure: Ratis's log worker (3.3) fails the entry that met an
 * {@code IOException} (ENOSPC) and then fails every later entry of its division with "Log already failed at index",
 * for good: its division takes no write again until the server restarts, although space was freed. RocksDB also turns
 * read-only on a failed write. So a peer must never let its own writes reach a full disk. The reserve is a tenth of
 * the file system, between {@link #RESERVE_BYTES_MIN} and {@link #RESERVE_BYTES_MAX}: room for a log segment's
 * preallocation, a snapshot, and the commands that free state (releases, closes, expiries), which pass until a
 * quarter of the reserve is left so that sessions still end and locks still pass on while writes that add state
 * are refused.
 */
public final class DiskReserve {
    /** The largest reserve: a log segment's preallocation and a snapshot of a large state fit many times. */
    public static final long RESERVE_BYTES_MAX = 64L << 20;
    /** The smallest reserve, on a small file system. */
    public static final long RESERVE_BYTES_MIN = 1L << 20;
    /** How long one reading of the free space is used: a write in the meantime costs no system call. */
    static final long READING_NANOS = 200_000_000L;

    private final Path directory;
    private final FileStore store;
    private final long reserveBytes;
    private final Ticker ticker;
    private volatile long readNanos;
    private volatile long usableBytes = Long.MAX_VALUE;
    private volatile boolean read;

    private DiskReserve(Path directory, FileStore store, long reserveBytes, Ticker ticker) {
        this.directory = directory;
        this.store = store;
        this.reserveBytes = reserveBytes;
        this.ticker = ticker;
    }

    /** Returns the reserve of {@code directory} (which must exist): a tenth of its file system, bounded. */
    public static DiskReserve of(Path directory, Ticker ticker) throws IOException {
        FileStore store = Files.getFileStore(Objects.requireNonNull(directory, "directory"));
        long reserve = Math.max(RESERVE_BYTES_MIN, Math.min(RESERVE_BYTES_MAX, store.getTotalSpace() / 10));
        return new DiskReserve(directory, store, reserve, Objects.requireNonNull(ticker, "ticker"));
    }

    /** Returns the bytes this directory keeps free. */
    public long reserveBytes() {
        return reserveBytes;
    }

    /**
     * Refuses a write that adds state while less than the reserve is free, and any write while less than a quarter
     * of it is.
     *
     * @param addsState true for a write that makes the state larger (a new session, an acquire, a store write);
     *     false for one that frees state (a release, a close, an expiry), which may use the reserve's upper part
     * @throws LimitExceededException (RESOURCE_EXHAUSTED, limit {@code diskReserveBytes}) naming the directory, its
     *     free bytes and the reserve
     */
    public void check(boolean addsState) {
        long usable = usableBytes();
        long floor = addsState ? reserveBytes : reserveBytes / 4;
        if (usable < floor) {
            throw new LimitExceededException("diskReserveBytes", floor, "the data directory " + directory + " has "
                    + usable + " bytes free, under the " + floor + " bytes it keeps free"
                    + (addsState ? "" : " even for writes that free state")
                    + ": writes are refused until space is freed on its file system");
        }
    }

    /** Returns the usable bytes, read again when the last reading is older than {@link #READING_NANOS}. */
    private long usableBytes() {
        long now = ticker.nanoTime();
        if (read && now - readNanos < READING_NANOS) {
            return usableBytes;
        }
        try {
            usableBytes = store.getUsableSpace();
        } catch (IOException e) {
            usableBytes = Long.MAX_VALUE; // unknown: the write itself will say what is wrong
        }
        readNanos = now;
        read = true;
        return usableBytes;
    }
}
