package io.fencer.files;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The fence file of a fenced directory cannot be trusted: its checksum does not match, its format version is not
 * one this release reads, or it does not parse. Nothing was written: a directory whose accepted token is unknown
 * admits no write, because admitting one could let a stale writer replace a newer writer's file.
 *
 * <p>Recovery is an operator's decision: restore the fence file from a backup, or write a new one whose accepted
 * token is at least the highest token ever issued for the scope (the lock service's latest token).
 */
public final class FenceFileCorruptException extends IOException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    FenceFileCorruptException(Path file, String why) {
        super("fence file " + file + " is corrupt, nothing was written: " + why);
        this.file = file;
    }

    /** Returns the path of the fence file. */
    public Path file() {
        return file;
    }
}
