package io.fencer.store;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.Sequencer;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The checks a request passes before it takes a scope's guard: its sequencer parsed (and verified, when keys are
 * configured), and its ops, keys, values and unit timeout held against the limits of {@link StoreOptions}. Each
 * refusal is an {@link InvalidArgumentException} naming the limit and the value. Immutable and thread-safe.
 */
final class RequestChecks {
    private final StoreOptions options;

    RequestChecks(StoreOptions options) {
        this.options = options;
    }

    /** Parses {@code sequencer}, verifying its signature when the options carry keys. */
    FencingToken parseToken(String sequencer) {
        return Sequencer.parse(sequencer, options.keys());
    }

    /**
     * Parses the sequencer of a write or unit to {@code scope}, as {@link #parseToken}, and refuses a shared-mode
     * token: readers of a read-write lock overlap, so none of them may write.
     *
     * @throws ModeMismatchException when the token is a shared grant; nothing was written
     */
    FencingToken parseWriteToken(String scope, String sequencer) {
        FencingToken token = parseToken(sequencer);
        if (token.mode() != LockMode.EXCLUSIVE) {
            throw new ModeMismatchException(scope, token.value(), token.mode());
        }
        return token;
    }

    /** Checks the ops of one write against the limits; returns their bytes of keys and values. */
    long checkOps(String scope, List<Op> ops) {
        if (ops.isEmpty()) {
            throw new InvalidArgumentException("ops", "[]", "a write to scope '" + scope + "' needs at least one op");
        }
        if (ops.size() > options.opsPerWriteMax()) {
            throw new InvalidArgumentException("ops", Integer.toString(ops.size()), "a write to scope '" + scope
                    + "' has " + ops.size() + " ops, more than the opsPerWriteMax of " + options.opsPerWriteMax());
        }
        long bytes = 0;
        for (Op op : ops) {
            checkOp(scope, op);
            bytes += op.bytes();
        }
        checkBatchBytes(scope, bytes);
        return bytes;
    }

    void checkOp(String scope, Op op) {
        checkKey(scope, op.keyBytes());
        byte[] value = op.valueBytes();
        if (value != null && value.length > options.valueBytesMax()) {
            throw new InvalidArgumentException("value", value.length + " bytes", "the value of key "
                    + StoreCodec.describe(op.keyBytes()) + " in scope '" + scope + "' is " + value.length
                    + " bytes, more than the valueBytesMax of " + options.valueBytesMax());
        }
    }

    /** Checks a unit's totals after adding one op; call under the unit's lock. */
    void checkUnitTotals(Unit unit, int opsCount, long bytes) {
        if (opsCount > options.opsPerWriteMax()) {
            throw new InvalidArgumentException("ops", Integer.toString(opsCount), "unit " + unit.id() + " of scope '"
                    + unit.scope() + "' would hold " + opsCount + " ops, more than the opsPerWriteMax of "
                    + options.opsPerWriteMax());
        }
        checkBatchBytes(unit.scope(), bytes);
    }

    void checkKey(String scope, byte[] key) {
        if (key.length == 0) {
            throw new InvalidArgumentException("key", "", "keys must not be empty (scope '" + scope + "')");
        }
        if (key.length > options.keyBytesMax()) {
            throw new InvalidArgumentException("key", StoreCodec.describe(key), "key " + StoreCodec.describe(key)
                    + " in scope '" + scope + "' is " + key.length + " bytes, more than the keyBytesMax of "
                    + options.keyBytesMax());
        }
    }

    void checkTimeout(String scope, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new InvalidArgumentException("timeout", timeout.toString(), "a unit timeout must be positive, got "
                    + timeout + " for scope '" + scope + "'");
        }
        if (timeout.compareTo(options.unitDurationMax()) > 0) {
            throw new InvalidArgumentException("timeout", timeout.toString(), "unit timeout " + timeout
                    + " for scope '" + scope + "' is more than the unitDurationMax of " + options.unitDurationMax());
        }
    }

    private void checkBatchBytes(String scope, long bytes) {
        if (bytes > options.batchBytesMax()) {
            throw new InvalidArgumentException("ops", bytes + " bytes", "a write to scope '" + scope + "' carries "
                    + bytes + " bytes of keys and values, more than the batchBytesMax of " + options.batchBytesMax());
        }
    }
}
