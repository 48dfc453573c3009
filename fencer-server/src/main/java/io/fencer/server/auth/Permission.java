package io.fencer.server.auth;

import java.util.Locale;
import java.util.Optional;

/**
 * A permission an ACL line grants on the names under its prefix, as the word the file and errors use.
 *
 * <ul>
 *   <li>{@code lock}: Acquire and Release of those lock names; and the session calls (OpenSession, KeepAlive,
 *       CloseSession), which name no lock and need {@code lock} on some prefix.</li>
 *   <li>{@code read}: Describe, List and Validate of those lock names; Get and Fence on those store scopes.</li>
 *   <li>{@code write}: store writes and units on those scopes; includes {@code read}, since a writer reads back
 *       what it wrote.</li>
 *   <li>{@code admin}: CreateScope of those scopes, and everything the other permissions allow.</li>
 * </ul>
 */
public enum Permission {
    LOCK,
    READ,
    WRITE,
    ADMIN;

    /** Returns the word of this permission in ACL files and errors: {@code lock}, {@code read} ... */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Returns whether a rule granting this permission also grants {@code needed}. */
    boolean grants(Permission needed) {
        return this == needed || this == ADMIN || (this == WRITE && needed == READ);
    }

    /** Returns the permission spelt {@code word} (exactly, lower case), if any. */
    static Optional<Permission> ofWord(String word) {
        for (Permission permission : values()) {
            if (permission.word().equals(word)) {
                return Optional.of(permission);
            }
        }
        return Optional.empty();
    }
}
