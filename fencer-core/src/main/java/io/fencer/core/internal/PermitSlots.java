package io.fencer.core.internal;

/**
 * The lock names of a semaphore's permit slots: slot {@code i} of semaphore {@code jobs} is the lock
 * {@code jobs/permit-i}, with its own token counter, so a resource partitioned by slot fences each partition exactly
 * as for a lock (its scope is the slot's lock name). While a semaphore is in use its slot names are reserved: a plain
 * acquire of one is refused, and a semaphore whose slot name is held as a plain lock cannot be used.
 */
public final class PermitSlots {
    /** The infix between a semaphore's name and a slot's index. */
    public static final String INFIX = "/permit-";

    private PermitSlots() {}

    /** A slot: its semaphore and its permit index, from 0. */
    public record Slot(String semaphore, int permit) {}

    /** Returns the lock name of slot {@code permit} of {@code semaphore}. */
    public static String slotName(String semaphore, int permit) {
        return semaphore + INFIX + permit;
    }

    /**
     * Returns the semaphore and permit index a lock name has the slot form of ({@code <semaphore>/permit-<i>}, the
     * index a decimal without leading zeros), or null.
     */
    public static Slot parse(String lock) {
        int infix = lock.lastIndexOf(INFIX);
        if (infix <= 0) {
            return null;
        }
        String digits = lock.substring(infix + INFIX.length());
        if (digits.isEmpty() || digits.length() > 9 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')
                || (digits.length() > 1 && digits.charAt(0) == '0')) {
            return null;
        }
        return new Slot(lock.substring(0, infix), Integer.parseInt(digits));
    }
}
