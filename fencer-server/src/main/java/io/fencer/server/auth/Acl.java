package io.fencer.server.auth;

import java.util.ArrayList;
import io.fencer.server.rpc.Identities;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * The rules of one ACL file, immutable: which identity holds which {@link Permission} on the names under which
 * prefix, and the {@link Quota}s it sets for some identities. A name is allowed when any rule for the caller's
 * identity (or for any identity, {@code *}) grants the permission on a prefix the name starts with (or on any name,
 * {@code *}); nothing else is allowed.
 *
 * <p>Rules are kept by identity, so a check reads only the caller's rules and the wildcard ones: a few, however
 * long the file. Thread-safe.
 */
public final class Acl {
    /** The identity, or the prefix, that matches every identity or every name. */
    public static final String ANY = "*";

    private final Map<String, List<Rule>> rulesByIdentity;
    private final List<Rule> rulesForAnyIdentity;
    private final int ruleCount;
    /** Quota values by identity (as written: a CN, {@code anonymous}, {@code anonymous@ADDRESS} or {@code *}). */
    private final Map<String, Map<Quota, Integer>> quotasByIdentity;

    /**
     * One line of the file.
     *
     * @param identity the identity it applies to, or {@link #ANY}
     * @param permission the permission it grants
     * @param prefix the names it covers: those that start with it, or every name for {@link #ANY}
     */
    public record Rule(String identity, Permission permission, String prefix) {
        public Rule {
            Objects.requireNonNull(identity, "identity");
            Objects.requireNonNull(permission, "permission");
            Objects.requireNonNull(prefix, "prefix");
        }

        boolean covers(String name) {
            return prefix.equals(ANY) || name.startsWith(prefix);
        }
    }

    /**
     * One quota line of the file.
     *
     * @param identity the identity it applies to: a CN, {@code anonymous} (each anonymous address alone),
     *     {@code anonymous@ADDRESS} (one address), or {@link #ANY}
     * @param quota the quota it sets
     * @param value the quota's value, at least 1
     */
    public record QuotaRule(String identity, Quota quota, int value) {
        public QuotaRule {
            Objects.requireNonNull(identity, "identity");
            Objects.requireNonNull(quota, "quota");
            if (value < 1) {
                throw new IllegalArgumentException("quota " + quota.word() + " of " + identity + " is " + value);
            }
        }
    }

    Acl(List<Rule> rules) {
        this(rules, List.of());
    }

    Acl(List<Rule> rules, List<QuotaRule> quotas) {
        Map<String, List<Rule>> byIdentity = new HashMap<>();
        List<Rule> forAny = new ArrayList<>();
        for (Rule rule : rules) {
            if (rule.identity().equals(ANY)) {
                forAny.add(rule);
            } else {
                byIdentity.computeIfAbsent(rule.identity(), identity -> new ArrayList<>()).add(rule);
            }
        }
        byIdentity.replaceAll((identity, list) -> List.copyOf(list));
        this.rulesByIdentity = Collections.unmodifiableMap(byIdentity);
        this.rulesForAnyIdentity = List.copyOf(forAny);
        this.ruleCount = rules.size();
        Map<String, Map<Quota, Integer>> byIdentityQuotas = new HashMap<>();
        for (QuotaRule rule : quotas) {
            byIdentityQuotas.computeIfAbsent(rule.identity(), identity -> new EnumMap<>(Quota.class))
                    .put(rule.quota(), rule.value());
        }
        byIdentityQuotas.replaceAll((identity, values) -> Collections.unmodifiableMap(values));
        this.quotasByIdentity = Collections.unmodifiableMap(byIdentityQuotas);
    }

    /**
     * Returns the value this file sets for {@code quota} of {@code quotaIdentity} (a CN, or {@code anonymous@ADDRESS}
     * for an anonymous caller), if it sets one: from its own line; for an anonymous caller, else from a line for
     * {@code anonymous} (which applies to each anonymous address alone); else from a line for {@code *}.
     */
    public OptionalInt quota(String quotaIdentity, Quota quota) {
        Integer value = quotaOf(quotaIdentity, quota);
        String anonymous = Identities.ANONYMOUS + "@";
        if (value == null && quotaIdentity.startsWith(anonymous)) {
            value = quotaOf(Identities.ANONYMOUS, quota);
        }
        if (value == null) {
            value = quotaOf(ANY, quota);
        }
        return value == null ? OptionalInt.empty() : OptionalInt.of(value);
    }

    private Integer quotaOf(String identity, Quota quota) {
        Map<Quota, Integer> values = quotasByIdentity.get(identity);
        return values == null ? null : values.get(quota);
    }

    /** Returns how many identities (or {@link #ANY}) the file sets quotas for. */
    public int quotaIdentityCount() {
        return quotasByIdentity.size();
    }

    /** Returns whether {@code identity} holds {@code needed} on {@code name} (a lock name, scope or prefix). */
    public boolean allows(String identity, Permission needed, String name) {
        return anyRuleAllows(rulesByIdentity.getOrDefault(identity, List.of()), needed, name)
                || anyRuleAllows(rulesForAnyIdentity, needed, name);
    }

    /** Returns whether {@code identity} holds {@code needed} on at least one name. */
    public boolean allowsSomewhere(String identity, Permission needed) {
        return anyRuleGrants(rulesByIdentity.getOrDefault(identity, List.of()), needed)
                || anyRuleGrants(rulesForAnyIdentity, needed);
    }

    /** Returns how many rules the file had. */
    public int ruleCount() {
        return ruleCount;
    }

    /** Returns how many distinct identities the rules name, {@link #ANY} not counted. */
    public int identityCount() {
        return rulesByIdentity.size();
    }

    private static boolean anyRuleAllows(List<Rule> rules, Permission needed, String name) {
        for (Rule rule : rules) {
            if (rule.permission().grants(needed) && rule.covers(name)) {
                return true;
            }
        }
        return false;
    }

    private static boolean anyRuleGrants(List<Rule> rules, Permission needed) {
        for (Rule rule : rules) {
            if (rule.permission().grants(needed)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "Acl[" + ruleCount + " rules for " + identityCount() + " identities"
                + (rulesForAnyIdentity.isEmpty() ? "" : " and any identity") + "]";
    }
}
