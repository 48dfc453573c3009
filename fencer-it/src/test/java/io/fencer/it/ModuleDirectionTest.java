package io.fencer.it;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.fencer.it.direction.ReachesIntoAdapterInternals;
import io.fencer.it.direction.ReachesIntoClientInternals;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The module direction at the level of imports: Maven's enforcer (each module's {@code module-direction} rule)
 * bans the forbidden dependencies, and these rules ban what a dependency alone does not show, such as code outside
 * the client reaching into {@code io.fencer.client.internal}. The resource adapters on this module's test class path
 * are fencer-jdbc and fencer-files (with fencer-adapter-support); the others' enforcer rules guard them alone.
 */
class ModuleDirectionTest {
    /** The resource adapters' packages, and the support they share. */
    private static final String[] ADAPTERS = {"io.fencer.adapter..", "io.fencer.jdbc..", "io.fencer.redis..",
        "io.fencer.files..", "io.fencer.kafka..", "io.fencer.s3.."};

    private static JavaClasses fencer;

    @BeforeAll
    static void importMainClasses() {
        fencer = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.fencer");
    }

    static List<ArchRule> rules() {
        return List.of(
                noClasses().that().resideOutsideOfPackage("io.fencer.client..")
                        .should().dependOnClassesThat().resideInAPackage("io.fencer.client.internal..")
                        .because("client.internal is the client's implementation, not an API"),
                noClasses().that().resideInAPackage("io.fencer.core..")
                        .should().dependOnClassesThat().resideOutsideOfPackages("java..", "javax..", "io.fencer.core..")
                        .because("fencer-core depends on nothing but the JDK"),
                noClasses().that().resideInAPackage("io.fencer.lock..")
                        .should().dependOnClassesThat().resideInAnyPackage("io.fencer.api..", "io.fencer.server..",
                                "io.fencer.store..", "io.fencer.client..", "io.grpc..", "com.google.protobuf..",
                                "org.apache.ratis..")
                        .because("the lock state machine is deterministic and depends on core only"),
                noClasses().that().resideInAPackage("io.fencer.client..")
                        .should().dependOnClassesThat().resideInAnyPackage("io.fencer.server..",
                                "io.fencer.store..", "io.fencer.lock..")
                        .because("the client speaks the wire contract only"),
                noClasses().that().resideInAnyPackage("io.fencer.server..", "io.fencer.store..")
                        .should().dependOnClassesThat().resideInAnyPackage("io.fencer.client..",
                                "io.fencer.chaos..", "io.fencer.cli..", "io.fencer.load..")
                        .because("the server sits below the client, the harness and the command line"),
                noClasses().that().resideInAnyPackage("io.fencer.chaos..", "io.fencer.load..")
                        .should().dependOnClassesThat().resideInAnyPackage("io.fencer.server..",
                                "io.fencer.cli..")
                        .because("the harness and the load generators reach servers as processes and clients"),
                adapterInternalsRule(),
                noClasses().that().resideInAPackage("io.fencer.adapter..")
                        .should().dependOnClassesThat().resideOutsideOfPackages("java..", "javax..",
                                "io.fencer.core..", "io.fencer.adapter..", "io.micrometer..")
                        .because("the adapters' shared support depends on core and Micrometer only"),
                noClasses().that().resideInAnyPackage(ADAPTERS)
                        .should().dependOnClassesThat().resideInAnyPackage("io.fencer.api..", "io.fencer.lock..",
                                "io.fencer.store..", "io.fencer.server..", "io.fencer.client..",
                                "io.fencer.testing..", "io.fencer.chaos..", "io.fencer.cli..", "io.fencer.load..",
                                "io.fencer.spring..")
                        .because("a resource owner enforces tokens with core and the adapters' shared support"));
    }

    /** Only the resource adapters use what they share: it may change with them, unlike an API. */
    private static ArchRule adapterInternalsRule() {
        return noClasses().that().resideOutsideOfPackages(ADAPTERS)
                .should().dependOnClassesThat().resideInAPackage("io.fencer.adapter.internal..")
                .because("adapter.internal is what the resource adapters share, not an API");
    }

    @ParameterizedTest
    @MethodSource("rules")
    void rule_overFencersMainClasses_holds(ArchRule rule) {
        rule.check(fencer);
    }

    @Test
    void clientInternalsRule_overAClassThatImportsThem_reportsTheViolation() {
        // The control: the rule must be able to fail, or its passing proves nothing.
        JavaClasses offender = new ClassFileImporter().importClasses(ReachesIntoClientInternals.class);

        EvaluationResult result = rules().get(0).evaluate(offender);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("ReachesIntoClientInternals")
                        .contains("io.fencer.client.internal"));
    }

    @Test
    void adapterInternalsRule_overAClassOutsideTheAdaptersThatImportsThem_reportsTheViolation() {
        // The control: the rule must be able to fail, or its passing proves nothing.
        JavaClasses offender = new ClassFileImporter().importClasses(ReachesIntoAdapterInternals.class);

        EvaluationResult result = adapterInternalsRule().evaluate(offender);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("ReachesIntoAdapterInternals")
                        .contains("io.fencer.adapter.internal.RefusalCounter"));
    }
}
