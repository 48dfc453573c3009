package io.fencer.store;

import io.fencer.core.FencePolicy;

/**
 * The state of one scope.
 *
 * @param scope the scope's name
 * @param lock the lock whose tokens the scope admits (the scope's own name unless bound otherwise)
 * @param policy the rule comparing presented tokens with the accepted one
 * @param accepted the highest token value accepted, or 0 for none
 * @param revision the count of writes and unit commits applied
 * @param exists false when nothing was ever written to or created in the scope (then the rest are defaults)
 * @param openUnitId the id of the unit holding the scope's guard, or null when none is open
 */
public record ScopeInfo(String scope, String lock, FencePolicy policy, long accepted, long revision, boolean exists,
        String openUnitId) {}
