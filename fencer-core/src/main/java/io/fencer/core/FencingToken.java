package io.fencer.core;

import io.fencer.core.internal.LockName;
import java.util.Objects;

/**
 * A fencing token: the proof of one grant of one lock, to be carried by every write to the resource
 * the lock protects.
 *
 * <p>The lock service takes {@link #value()} from a per-lock counter that only increases: every grant
 * of {@link #lock()} gets a value strictly greater than every value ever issued for that lock, across
 * release, session expiry, restart, leader failover and deletion and recreation of the lock. The first
 * value is 1; {@link #NONE} (0) means "no token". A token of one lock means nothing for another lock.
 *
 * <p>So the counter must never restart. A group started afresh (its data directories deleted) counts from 1 again,
 * and a token of the earlier incarnation then exceeds the new ones: resources refuse every new holder and still admit
 * the old. Keep the data. <b>Generations</b> make a restore from a backup safe: a value is
 * {@code generation * 2^}{@value #GENERATION_SHIFT}{@code  + counter} ({@link #generationOf}, {@link #counterOf}).
 * A group counts within one generation and refuses grants past its end ({@link #generationLast}); a group restored
 * from a backup of generation {@code g} counts in generation {@code g + 1} or later, so every token it grants exceeds
 * every token the backed-up group ever granted, even those granted after the backup was taken, which the backup
 * cannot know. Resources compare plain values: the generation orders before the counter with no change to them, and a
 * token of an earlier release (generation 0) is its counter.
 *
 * <p>Why the resource must check it, not the client: a lock service cannot stop a paused client from
 * writing after its lease expired.
 *
 * <pre>
 *   client A  acquire -> orders#33 ......[ GC pause ].................... write(orders#33)  REFUSED
 *   service                       lease of A expires; grant B orders#34
 *   client B                                      acquire -> orders#34, write(orders#34) accepted
 *   resource                                      accepted = 34 ................ 33 &lt; 34: stale
 * </pre>
 *
 * <p>The resource keeps the highest token it has accepted, durably, and compares every presented token
 * against it in the same atomic step as the write ({@link Fence} does exactly that in process).
 *
 * <p>A token has a {@link LockMode}: {@link LockMode#EXCLUSIVE} (every mutex grant, the default) or
 * {@link LockMode#SHARED} (a reader of a read-write lock). The mode travels in the sequencer; a resource refuses a
 * write under a shared token ({@link ModeMismatchException}) and compares it as any token on a fenced read.
 *
 * <p>An immutable value: two tokens are equal when their lock, value and mode are. (A final class rather than a record
 * so that {@link #of(LockName, long)} can skip checking a name that is already checked: a record's every
 * constructor runs its canonical one.)
 */
public final class FencingToken implements Comparable<FencingToken> {
    /** The token value meaning "no token": never issued. */
    public static final long NONE = 0;
    /** The highest value the service issues; a lock whose counter reaches it refuses further grants. */
    public static final long VALUE_MAX = Long.MAX_VALUE - 1;
    /** The bits of a value below its generation: a generation counts up to {@code 2^48 - 1} grants per lock. */
    public static final int GENERATION_SHIFT = 48;
    /** The highest generation: values stay below {@link #VALUE_MAX}. */
    public static final int GENERATION_MAX = (int) (VALUE_MAX >>> GENERATION_SHIFT) - 1;

    /** Returns the generation of a token value: its bits above {@link #GENERATION_SHIFT}. */
    public static int generationOf(long value) {
        return (int) (value >>> GENERATION_SHIFT);
    }

    /** Returns the counter of a token value within its generation: its low {@link #GENERATION_SHIFT} bits. */
    public static long counterOf(long value) {
        return value & ((1L << GENERATION_SHIFT) - 1);
    }

    /** Returns the value below every token of {@code generation}: its tokens start at this value + 1. */
    public static long generationBase(int generation) {
        checkGeneration(generation);
        return (long) generation << GENERATION_SHIFT;
    }

    /** Returns the highest value a group of {@code generation} grants. */
    public static long generationLast(int generation) {
        checkGeneration(generation);
        return ((long) (generation + 1) << GENERATION_SHIFT) - 1;
    }

    private static void checkGeneration(int generation) {
        if (generation < 0 || generation > GENERATION_MAX) {
            throw new IllegalArgumentException("generation " + generation + " is outside [0, " + GENERATION_MAX + "]");
        }
    }

    private final String lock;
    private final long value;
    private final LockMode mode;

    /**
     * Makes the token {@code value} of {@code lock}, checking both.
     *
     * @param lock the lock name, 1 to {@link LockNames#BYTES_MAX} bytes of UTF-8, no control characters
     * @param value the token value, in [1, {@link #VALUE_MAX}]
     * @throws InvalidArgumentException naming the offending lock name or value
     */
    public FencingToken(String lock, long value) {
        this(lock, value, LockMode.EXCLUSIVE);
    }

    /**
     * Makes the token {@code value} of {@code lock} in {@code mode}, checking the name and the value.
     *
     * @throws InvalidArgumentException naming the offending lock name or value
     */
    public FencingToken(String lock, long value, LockMode mode) {
        LockNames.check(lock);
        checkValue(lock, value);
        this.lock = lock;
        this.value = value;
        this.mode = Objects.requireNonNull(mode, "mode");
    }

    private FencingToken(LockName lock, long value, LockMode mode) {
        this.lock = lock.value();
        checkValue(this.lock, value);
        this.value = value;
        this.mode = Objects.requireNonNull(mode, "mode");
    }

    /**
     * Returns the token {@code value} of a lock whose name is already checked: only the value is checked. The
     * lock server makes every grant's token this way.
     *
     * @throws InvalidArgumentException naming the value when it is outside [1, {@link #VALUE_MAX}]
     */
    public static FencingToken of(LockName lock, long value) {
        return new FencingToken(Objects.requireNonNull(lock, "lock"), value, LockMode.EXCLUSIVE);
    }

    /** As {@link #of(LockName, long)} for a grant in {@code mode}. */
    public static FencingToken of(LockName lock, long value, LockMode mode) {
        return new FencingToken(Objects.requireNonNull(lock, "lock"), value, mode);
    }

    private static void checkValue(String lock, long value) {
        if (value < 1 || value > VALUE_MAX) {
            throw new InvalidArgumentException("token", Long.toString(value),
                    "token value must be in [1, " + VALUE_MAX + "], got " + value + " for lock '" + lock + "'");
        }
    }

    /** Returns the lock name, 1 to {@link LockNames#BYTES_MAX} bytes of UTF-8. */
    public String lock() {
        return lock;
    }

    /** Returns the token value, at least 1. */
    public long value() {
        return value;
    }

    /** Returns how the grant holds its lock: {@link LockMode#EXCLUSIVE} unless it is a shared (reader) grant. */
    public LockMode mode() {
        return mode;
    }

    /** Returns this lock and value in {@code mode}. */
    public FencingToken withMode(LockMode mode) {
        return mode == this.mode ? this : new FencingToken(LockName.of(lock), value, mode);
    }

    /**
     * Returns the opaque wire form, {@code fencer1.<base64url(lock)>.<value>} ({@code .shared} appended for a
     * shared grant), to hand to resources.
     */
    public String sequencer() {
        return Sequencer.format(this);
    }

    /**
     * Returns the wire form signed with the signing key of {@code keys},
     * {@code fencer1.<base64url(lock)>.<value>.<kid>.<base64url(mac)>}; see {@link Sequencer#format(FencingToken,
     * TokenKeys)}.
     */
    public String sequencer(TokenKeys keys) {
        return Sequencer.format(this, keys);
    }

    /** Parses the wire form produced by {@link #sequencer()}; see {@link Sequencer#parse(String)}. */
    public static FencingToken parse(String sequencer) {
        return Sequencer.parse(sequencer);
    }

    /** Returns true when this token is of the same lock as {@code other} and strictly newer. */
    public boolean isNewerThan(FencingToken other) {
        Objects.requireNonNull(other, "other");
        return lock.equals(other.lock) && value > other.value;
    }

    /**
     * Orders tokens of the same lock by value.
     *
     * @throws ScopeMismatchException when the tokens belong to different locks: they are not comparable
     */
    @Override
    public int compareTo(FencingToken other) {
        if (!lock.equals(other.lock)) {
            throw new ScopeMismatchException(lock, other);
        }
        return Long.compare(value, other.value);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof FencingToken token && value == token.value && lock.equals(token.lock)
                && mode == token.mode;
    }

    /** Returns the hash a record of {@code (lock, value)} would have. */
    @Override
    public int hashCode() {
        return 31 * lock.hashCode() + Long.hashCode(value);
    }

    /** Returns the display form, {@code orders#32}, or {@code orders#32(shared)} for a shared grant. */
    @Override
    public String toString() {
        return mode == LockMode.EXCLUSIVE ? lock + "#" + value : lock + "#" + value + "(shared)";
    }
}
