package io.fencer.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.fencer.cli.exec.GrantExec;
import io.fencer.cli.exec.offender.ExecCallingMain;
import org.junit.jupiter.api.Test;

/**
 * The packages of the command line: {@code io.fencer.cli} holds {@code Main}, the subcommands and their shared
 * options; {@code io.fencer.cli.exec} holds the fail-closed machinery of {@code lock exec} and {@code sem exec}
 * (the acquire that a signal interrupts, the supervised process group, the signal handlers), which knows nothing of
 * the subcommands or of picocli, so that its rules can be read and tested on their own.
 */
class CliPackagesTest {
    private static final ArchRule EXEC_BELOW_THE_COMMANDS = noClasses().that().resideInAPackage("io.fencer.cli.exec..")
            .should().dependOnClassesThat().resideInAnyPackage("io.fencer.cli", "picocli..")
            .because("the exec machinery is used by the subcommands and uses none of them");

    @Test
    void execRule_overTheModulesMainClasses_holds() {
        JavaClasses main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.fencer.cli");
        assertThat(main.contain(GrantExec.class)).as("the exec classes were imported").isTrue();

        EXEC_BELOW_THE_COMMANDS.check(main);
    }

    @Test
    void execRule_overAnExecClassNamingMain_reportsTheViolation() {
        // The control: the rule must be able to fail, or its passing proves nothing.
        EvaluationResult result = EXEC_BELOW_THE_COMMANDS.evaluate(
                new ClassFileImporter().importClasses(ExecCallingMain.class));

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("ExecCallingMain").contains("io.fencer.cli.Main"));
    }
}
