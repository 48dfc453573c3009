package io.fencer.chaos;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackages;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.fencer.chaos.check.offender.CheckStartingACluster;
import io.fencer.chaos.fault.NetworkFaults;
import io.fencer.chaos.history.offender.HistoryNamingAFault;
import io.fencer.chaos.process.Cluster;
import io.fencer.chaos.process.offender.ProcessPlayingAFault;
import io.fencer.chaos.report.offender.ReportReadingTheWorkerOptions;
import io.fencer.chaos.workload.Workload;
import io.fencer.chaos.workload.offender.WorkloadReadingTheRunOptions;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The packages of the harness and the direction between them. The root package holds the entry points (a run, the
 * offline check, the demo); below it {@code process} starts and signals processes, {@code fault} plans and plays the
 * faults, {@code workload} is what the workers do, {@code history} is the record they write, {@code check} judges a
 * history and {@code report} draws it, and {@code bench} measures failovers. A history and its verdict must not
 * depend on how the run was made, so that a saved history can be checked and drawn offline.
 *
 * <p>Each rule has a control: a deliberate offender in the test sources that the rule must report, or its passing
 * proves nothing.
 */
class ChaosPackagesTest {
    private static final String CHAOS = "io.fencer.chaos..";

    static final ArchRule HISTORY_STANDS_ALONE = noClasses().that().resideInAPackage("io.fencer.chaos.history..")
            .should().dependOnClassesThat(resideInAPackage(CHAOS)
                    .and(resideOutsideOfPackages("io.fencer.chaos.history..")))
            .because("a history is the record every other part writes or reads; it depends on none of them");

    static final ArchRule CHECK_READS_HISTORIES_ONLY = noClasses().that().resideInAPackage("io.fencer.chaos.check..")
            .should().dependOnClassesThat(resideInAPackage(CHAOS)
                    .and(resideOutsideOfPackages("io.fencer.chaos.check..", "io.fencer.chaos.history.."))
                    .and(DescribedPredicate.not(belongToAnyOf(Workload.class))))
            .because("the checker judges a history and the workload that made it, never the processes or faults"
                    + " of a run, so that a saved history is checked offline as it was checked live");

    static final ArchRule REPORT_DRAWS_CHECKED_HISTORIES = noClasses().that()
            .resideInAPackage("io.fencer.chaos.report..")
            .should().dependOnClassesThat(resideInAPackage(CHAOS).and(resideOutsideOfPackages(
                    "io.fencer.chaos.report..", "io.fencer.chaos.history..", "io.fencer.chaos.check..")))
            .because("the timeline draws a history and its verdict, whatever made them");

    static final ArchRule ROLES_FREE_OF_CYCLES = slices().matching("io.fencer.chaos.(*)..").should()
            .beFreeOfCycles()
            .because("each role package can be read knowing only the ones below it");

    static final ArchRule ROOT_ABOVE_THE_ROLES = noClasses().that().resideInAPackage("io.fencer.chaos.*..")
            .should().dependOnClassesThat(resideInAPackage("io.fencer.chaos"))
            .because("the root package holds the entry points, which use the roles, not the other way round");

    private static JavaClasses main;

    @BeforeAll
    static void importMainClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.fencer.chaos");
    }

    static Stream<Arguments> rules() {
        return Stream.of(
                Arguments.of("history", HISTORY_STANDS_ALONE,
                        new Class<?>[] {HistoryNamingAFault.class}, "io.fencer.chaos.fault.Fault"),
                Arguments.of("check", CHECK_READS_HISTORIES_ONLY,
                        new Class<?>[] {CheckStartingACluster.class}, "io.fencer.chaos.process.Cluster"),
                Arguments.of("report", REPORT_DRAWS_CHECKED_HISTORIES,
                        new Class<?>[] {ReportReadingTheWorkerOptions.class},
                        "io.fencer.chaos.workload.WorkerOptions"),
                // the offender closes a cycle with the network faults, which use the cluster
                Arguments.of("cycles", ROLES_FREE_OF_CYCLES,
                        new Class<?>[] {ProcessPlayingAFault.class, NetworkFaults.class, Cluster.class},
                        "io.fencer.chaos.fault.NetworkFaults"),
                Arguments.of("root", ROOT_ABOVE_THE_ROLES,
                        new Class<?>[] {WorkloadReadingTheRunOptions.class}, "io.fencer.chaos.ChaosOptions"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rules")
    void rule_overTheHarnesssMainClasses_holds(String name, ArchRule rule, Class<?>[] offenders, String target) {
        assertThat(main.contain(Cluster.class)).as("the main classes were imported").isTrue();

        rule.check(main);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rules")
    void rule_overADeliberateOffender_reportsTheViolation(String name, ArchRule rule, Class<?>[] offenders,
            String target) {
        // The control: the rule must be able to fail, or its passing proves nothing.
        EvaluationResult result = rule.evaluate(new ClassFileImporter().importClasses(offenders));

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains(offenders[0].getSimpleName()).contains(target));
    }
}
