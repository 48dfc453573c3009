package io.fencer.core;

/** The peer asked is not the leader of its group; {@link #leaderAddress()} says where to go, when known. */
public final class NotLeaderException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String leaderAddress;

    public NotLeaderException(String leaderAddress) {
        super(leaderAddress == null || leaderAddress.isEmpty()
                ? "this peer is not the leader and no leader is known yet"
                : "this peer is not the leader; the leader is " + leaderAddress);
        this.leaderAddress = leaderAddress == null ? "" : leaderAddress;
    }

    /** Returns the leader's client address ({@code host:port}), or empty when unknown. */
    public String leaderAddress() {
        return leaderAddress;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.NOT_LEADER;
    }
}
