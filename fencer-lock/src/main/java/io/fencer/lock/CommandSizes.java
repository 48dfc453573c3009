package io.fencer.lock;

import io.fencer.core.internal.LockName;
import java.util.Objects;

/**
 * How many bytes a command takes, at most, in a batch {@link CommandCodec} encodes: a bound the batch's writer uses
 * to keep a log entry under a size without encoding a command twice. Kept beside the codec's format, and checked
 * against it (its tests encode commands of the longest fields each type allows).
 */
public final class CommandSizes {
    /** The bytes a batch begins with: its version and its count of commands. */
    public static final int BATCH_HEADER_BYTES = 1 + Integer.BYTES;
    /**
     * The most bytes of a command's fields other than its strings: its tag, ids, hash, counts and flags (46 for an
     * AcquireAll or an AcquirePermit, the most).
     */
    private static final int FIXED_FIELDS_BYTES_MAX = 64;

    private CommandSizes() {
    }

    /**
     * Returns the most bytes {@code command} takes in a batch: its strings counted at three bytes a char (UTF-8's most
     * for a UTF-16 char) and their lengths. The batch adds {@value #BATCH_HEADER_BYTES} bytes.
     */
    public static long encodedBytesMax(Command command) {
        Objects.requireNonNull(command, "command");
        if (command instanceof Command.StoreEntry store) {
            return 1 + Integer.BYTES + store.entry().length;
        }
        if (command instanceof Command.RaiseFloor) {
            return 1 + Integer.BYTES; // its tag and gap, exactly
        }
        if (command instanceof Command.CheckpointLeases checkpoint) {
            return 1 + Integer.BYTES + 2L * Long.BYTES * checkpoint.checkpoints().size();
        }
        long texts = 0;
        if (command instanceof Command.AcquireAll all) {
            for (LockName name : all.lockNames()) {
                texts += textBytesMax(name.value());
            }
            texts += textBytesMax(all.requestId());
        } else if (command instanceof Command.OpenSession open) {
            texts = textBytesMax(open.requestId()) + textBytesMax(open.identity()) + textBytesMax(open.quotaIdentity());
        } else if (command instanceof Command.Acquire acquire) {
            texts = textBytesMax(acquire.lockName().value()) + textBytesMax(acquire.requestId());
        } else if (command instanceof Command.CancelWait cancel) {
            texts = textBytesMax(cancel.lockName().value()) + textBytesMax(cancel.requestId());
        } else if (command instanceof Command.AcquirePermit permit) {
            texts = textBytesMax(permit.semaphoreName().value()) + textBytesMax(permit.requestId());
        } else if (command instanceof Command.Revoke revoke) {
            texts = textBytesMax(revoke.lockName().value()) + textBytesMax(revoke.revokedBy());
        } else if (command instanceof Command.Release release) {
            texts = textBytesMax(release.lockName().value());
        } else if (command instanceof Command.EndLockDelay end) {
            texts = textBytesMax(end.lockName().value());
        }
        return FIXED_FIELDS_BYTES_MAX + texts;
    }

    /** A string's most bytes as the codec writes it: its length, then at most three bytes a char. */
    private static long textBytesMax(String text) {
        return Integer.BYTES + (text == null ? 0 : 3L * text.length());
    }
}
