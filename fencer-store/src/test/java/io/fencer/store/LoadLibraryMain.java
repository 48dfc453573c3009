package io.fencer.store;

import java.nio.file.Files;
import java.nio.file.Path;
import org.rocksdb.RocksDB;

/**
 * The child process of {@link RocksLibraryProcessTest}: loads RocksDB's native library, prints the file it mapped
 * ({@code MAPPED path}, read from {@code /proc/self/maps}) and {@code READY}, and sleeps until it is killed.
 *
 * <p>Argument: {@code fencer} loads it as the store does ({@link RocksLibrary}), {@code rocksdb} with RocksDB's own
 * loader, the control.
 */
public final class LoadLibraryMain {
    private LoadLibraryMain() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "fencer" -> RocksLibrary.load();
            case "rocksdb" -> RocksDB.loadLibrary();
            default -> throw new IllegalArgumentException("fencer or rocksdb, not " + args[0]);
        }
        try (var lines = Files.lines(Path.of("/proc/self/maps"))) {
            lines.filter(line -> line.contains("rocksdbjni")).map(line -> line.substring(line.indexOf('/')))
                    .distinct().forEach(path -> System.out.println("MAPPED " + path));
        }
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
