package io.fencer.server;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.fencer.server.locks.LocksReachingIntoTheRoot;
import io.fencer.server.net.NetReachingIntoRaft;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The package graph inside fencer-server, as docs/ARCHITECTURE.md ("Packages inside fencer-server") draws it: each
 * role's package may use, inside the server, only the packages listed for it here; the root {@code io.fencer.server}
 * wires them all, and the roles read of it only its settings values ({@link #ROOT_SETTINGS}). A change that needs
 * another edge changes the doc and this table together.
 */
class PackageGraphTest {
    private static final String SERVER = "io.fencer.server";
    /**
     * The root's settings values, which roles read when they start (raft: {@link ServerConfig} and {@link PeerAuth};
     * locks: {@link IdentityQuotas}). Every other root class is wiring, which no role may reach back into.
     */
    private static final DescribedPredicate<JavaClass> ROOT_SETTINGS =
            belongToAnyOf(ServerConfig.class, PeerAuth.class, IdentityQuotas.class);

    /** What each role's package may use inside the server, besides itself; true = the root's settings too. */
    private record Role(boolean rootSettings, String because, String... uses) {}

    private static final Map<String, Role> ROLES = roles();

    private static JavaClasses server;

    private static Map<String, Role> roles() {
        Map<String, Role> roles = new LinkedHashMap<>();
        roles.put("locks", new Role(true, "the lock role proposes through raft, checks with auth, answers through rpc"
                + " and hands Watch calls to watch", "raft", "auth", "rpc", "watch"));
        roles.put("peers", new Role(false, "the membership role changes raft's configuration, checks with auth and "
                + "answers through rpc", "raft", "auth", "rpc"));
        roles.put("watch", new Role(false, "Watch listens to raft's applied events and streams through rpc", "raft",
                "rpc"));
        roles.put("store", new Role(false, "the store role checks with auth, answers through rpc, logs refusals and"
                + " keeps its data directory's reserve through net, and replicates through raft's log with several"
                + " peers", "auth", "rpc", "net", "raft"));
        roles.put("auth", new Role(false, "access control reads the caller from rpc and logs refusals through net",
                "rpc", "net"));
        roles.put("admin", new Role(false, "/healthz and the Admin service read raft and check with auth; the admin"
                + " port is a net.HttpPort with tls; Admin answers through rpc", "raft", "net", "tls", "auth", "rpc"));
        roles.put("http", new Role(false, "the HTTP port calls the services through rpc.InProcessEndpoint only, on a "
                + "net.HttpPort with tls", "rpc", "net", "tls"));
        roles.put("raft", new Role(true, "replication uses rpc for ErrorCatalogue only, net for RefusalLog, tls for "
                + "the Raft port, and the root's settings when it starts", "rpc", "net", "tls"));
        roles.put("rpc", new Role(false, "the gRPC transport caps its port with net and takes its TLS from tls",
                "net", "tls"));
        roles.put("net", new Role(false, "the ports' shared defences use only tls", "tls"));
        roles.put("tls", new Role(false, "TLS material uses nothing else of the server"));
        return roles;
    }

    @BeforeAll
    static void importMainClasses() {
        server = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(SERVER);
    }

    /** Returns the rule that {@code role}'s package depends, inside the server, on nothing beyond its table row. */
    static ArchRule roleRule(String role) {
        Role row = ROLES.get(role);
        List<String> allowed = new ArrayList<>();
        allowed.add(SERVER + "." + role + "..");
        Arrays.stream(row.uses()).map(used -> SERVER + "." + used + "..").forEach(allowed::add);
        DescribedPredicate<JavaClass> outside = resideInAPackage(SERVER + "..")
                .and(not(resideInAnyPackage(allowed.toArray(String[]::new))));
        if (row.rootSettings()) {
            outside = outside.and(not(ROOT_SETTINGS));
        }
        String described = "reside in io.fencer.server outside " + role
                + (row.uses().length == 0 ? "" : ", " + String.join(", ", row.uses()))
                + (row.rootSettings() ? " and are not the root's settings values" : "");
        return noClasses().that().resideInAPackage(SERVER + "." + role + "..")
                .should().dependOnClassesThat(outside.as(described)).because(row.because());
    }

    static Stream<String> roleNames() {
        return ROLES.keySet().stream();
    }

    @ParameterizedTest
    @MethodSource("roleNames")
    void roleRule_overTheServersMainClasses_holds(String role) {
        roleRule(role).check(server);
    }

    @Test
    void rolePackages_overTheServersMainClasses_areFreeOfCycles() {
        slices().matching(SERVER + ".(*)..").should().beFreeOfCycles().check(server);
    }

    @Test
    void everySubPackage_hasARow() {
        // A new package without a row would be checked by no rule.
        List<String> packages = server.stream().map(JavaClass::getPackageName)
                .filter(name -> name.startsWith(SERVER + "."))
                .map(name -> name.substring(SERVER.length() + 1).split("\\.")[0]).distinct().toList();

        assertThat(ROLES.keySet()).containsExactlyInAnyOrderElementsOf(packages);
    }

    @Test
    void netRule_overAClassReachingIntoRaft_reportsTheViolation() {
        // The control: the rules must be able to fail, or their passing proves nothing.
        JavaClasses offender = new ClassFileImporter().importClasses(NetReachingIntoRaft.class);

        EvaluationResult result = roleRule("net").evaluate(offender);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("NetReachingIntoRaft").contains("raft.RaftNode"));
    }

    @Test
    void locksRule_overAClassReachingIntoTheRootsWiring_reportsItButNotTheSettingsValue() {
        JavaClasses offender = new ClassFileImporter().importClasses(LocksReachingIntoTheRoot.class);

        EvaluationResult result = roleRule("locks").evaluate(offender);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("LocksReachingIntoTheRoot")
                        .contains("io.fencer.server.FencerServer"))
                .noneSatisfy(line -> assertThat(line).contains("IdentityQuotas"));
    }
}
