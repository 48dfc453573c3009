package io.fencer.spring;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.fencer.server.ServerConfig;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The module direction of fencer-spring at the level of imports, beside its enforcer rule: its main classes use the
 * client's public API, core and jdbc, never the client's internals, the resource adapters' shared internals, the
 * server, the store or the state machine (those are for its tests only).
 */
class SpringModuleDirectionTest {
    private static final ArchRule RULE = noClasses().that().resideInAPackage("io.fencer.spring..")
            .should().dependOnClassesThat().resideInAnyPackage("io.fencer.client.internal..", "io.fencer.server..",
                    "io.fencer.store..", "io.fencer.lock..", "io.fencer.api..", "io.grpc..",
                    "io.fencer.adapter.internal..")
            .because("fencer-spring is built on the client's public API, core and jdbc (not on what the adapters"
                    + " share, which jdbc brings along)");

    @Test
    void rule_overTheModulesMainClasses_holds() {
        JavaClasses main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.fencer.spring");
        assertThat(main).as("the main classes were imported").isNotEmpty();

        RULE.check(main);
    }

    @Test
    void rule_overATestHelperThatConfiguresAServer_reportsTheViolation() {
        // The control: the rule must be able to fail, or its passing proves nothing.
        EvaluationResult result = RULE.evaluate(new ClassFileImporter().importClasses(ConfiguresAServer.class));

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("ConfiguresAServer").contains("io.fencer.server"));
    }

    /** A class of this module that reaches into the server, as only its tests may. */
    static final class ConfiguresAServer {
        static ServerConfig config(Path dataDir) {
            return ServerConfig.defaults(dataDir);
        }
    }
}
