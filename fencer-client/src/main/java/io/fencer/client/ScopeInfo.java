package io.fencer.client;

import io.fencer.core.FencePolicy;

/**
 * The state of one store scope, as {@link FencedStore#fence(String)} reports it.
 *
 * @param scope the scope's name
 * @param lock the lock whose tokens the scope admits
 * @param policy the rule comparing presented tokens with the accepted one
 * @param accepted the highest token value accepted, or 0 for none
 * @param revision the count of writes and unit commits applied
 * @param exists false when nothing was ever written to or created in the scope (the rest are then defaults)
 */
public record ScopeInfo(String scope, String lock, FencePolicy policy, long accepted, long revision,
        boolean exists) {}
