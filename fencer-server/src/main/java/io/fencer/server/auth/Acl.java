package io.fencer.server.auth;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The rules of one ACL file, immutable: which identity holds which {@link Permission} on the names under which
 * prefix. A name is allowed when any rule for the caller's identity (or for any identity, {@code *}) grants the
 * permission on a prefix the name starts with (or on any name, {@code *}); nothing else is allowed.
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

    Acl(List<Rule> rules) {
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
