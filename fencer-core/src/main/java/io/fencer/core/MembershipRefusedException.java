package io.fencer.core;

import java.util.Objects;

/**
 * A change of the group's membership (add, promote or remove a peer) was refused, and the configuration did not
 * change: another change is in progress, the peer is already there (or is not), the change would leave no majority
 * of live voters, or the new peer did not catch up. {@link #peerId()} names the peer the change was about,
 * {@link #why()} says why, as a clause. Retrying the same change helps only once the cause is gone.
 */
public final class MembershipRefusedException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String peerId;
    private final String why;

    public MembershipRefusedException(String peerId, String why) {
        super("membership change of peer '" + Objects.requireNonNull(peerId, "peerId") + "' refused: "
                + Objects.requireNonNull(why, "why"));
        this.peerId = peerId;
        this.why = why;
    }

    /** Returns the id of the peer the refused change named. */
    public String peerId() {
        return peerId;
    }

    /** Returns why the change was refused, as a clause ("another change is in progress: ..."). */
    public String why() {
        return why;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.MEMBERSHIP_REFUSED;
    }
}
