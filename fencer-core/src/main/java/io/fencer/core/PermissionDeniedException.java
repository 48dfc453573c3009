package io.fencer.core;

/**
 * The server's access-control list grants the calling identity no permission for this call on this name: the
 * caller is known (or anonymous) but not allowed. Nothing was proposed, read or written.
 *
 * <p>Not retryable: the same call by the same identity is refused again until an operator changes the ACL.
 */
public final class PermissionDeniedException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String identity;
    private final String permission;
    private final String name;
    private final String why;

    /**
     * @param identity the caller's identity (a client certificate's CN, or {@code anonymous})
     * @param permission the permission the call needs: {@code lock}, {@code read}, {@code write} or {@code admin}
     * @param name the lock name, scope or list prefix the call is about; empty for session calls, which need the
     *     permission on some name rather than on one
     */
    public PermissionDeniedException(String identity, String permission, String name) {
        this(identity, permission, name, "");
    }

    /**
     * As the other constructor, with {@code why} the call needs the permission, as a clause appended to the
     * sentence: for refusals the ACL file alone does not explain (empty for none).
     */
    public PermissionDeniedException(String identity, String permission, String name, String why) {
        super("permission denied: identity '" + InvalidArgumentException.printable(identity) + "' has no '"
                + InvalidArgumentException.printable(permission) + "' permission "
                + (name.isEmpty() ? "on any name" : "on '" + InvalidArgumentException.printable(name) + "'")
                + (why == null || why.isEmpty() ? "" : ": " + why));
        this.identity = identity;
        this.permission = permission;
        this.name = name;
        this.why = why == null ? "" : why;
    }

    /** Returns why the call needs the permission, when the refusal explains it; empty otherwise. */
    public String why() {
        return why;
    }

    /** Returns the identity that was refused. */
    public String identity() {
        return identity;
    }

    /** Returns the permission the call needed. */
    public String permission() {
        return permission;
    }

    /** Returns the lock name, scope or prefix the permission was needed on; empty when any name would do. */
    public String name() {
        return name;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.PERMISSION_DENIED;
    }
}
