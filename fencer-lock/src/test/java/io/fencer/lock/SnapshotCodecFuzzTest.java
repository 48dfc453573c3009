package io.fencer.lock;

import io.fencer.core.FuzzBudget;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;

/**
 * Fuzzes the lock state's snapshot reader: a snapshot file from disk or installed by the leader. Each input either
 * restores a state that passes {@link LockInvariants} or is refused with the one typed error, {@link IOException};
 * any other throwable, an allocation sized by a claimed count, or a hang is a finding ({@link FuzzBudget}).
 */
class SnapshotCodecFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void read_anyBytes_restoresOrRefuses(byte[] bytes) throws Exception {
        FuzzBudget.check(bytes.length, () -> {
            try {
                SnapshotCodec.read(new DataInputStream(new ByteArrayInputStream(bytes)), Limits.DEFAULT);
            } catch (IOException refused) {
                // the typed refusal (EOFException and UTFDataFormatException among them)
            }
        });
    }
}
