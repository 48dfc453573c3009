package io.fencer.it;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Nothing the project writes depends on the machine's default locale: formatting a number in it, or changing a
 * string's case, gives other text on other machines. In Arabic or Persian locales {@code %d} writes Arabic-Indic
 * digits (an S3 data object's key, a RocksDB library's directory); in Turkish ones {@code toLowerCase} makes
 * {@code EXPIRED} into {@code expıred} (the web console's event kinds, status codes). So every such call names
 * {@link Locale#ROOT}.
 */
class LocaleIndependenceTest {
    @Test
    void mainClasses_formatOrChangeCase_nameTheirLocale() {
        JavaClasses fencer = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(location -> !location.contains("-tests.jar")) // the server's test jar
                .importPackages("io.fencer");
        ArchRule rule = noClasses().should().callMethod(String.class, "format", String.class, Object[].class)
                .orShould().callMethod(String.class, "formatted", Object[].class)
                .orShould().callMethod(String.class, "toLowerCase")
                .orShould().callMethod(String.class, "toUpperCase")
                .because("the default locale's digits and case rules differ between machines: pass Locale.ROOT");

        EvaluationResult result = rule.evaluate(fencer);

        assertThat(fencer.size()).as("classes checked").isGreaterThan(500);
        assertThat(result.getFailureReport().getDetails()).isEmpty();
    }

    /** The control: the rule's subject is real on this JVM, whatever locale the machine has. */
    @Test
    void defaultLocaleForms_differFromRoot_inArabicAndTurkish() {
        assertThat(String.format(Locale.forLanguageTag("ar-SA"), "%05d", 42)).isNotEqualTo("00042");
        assertThat("EXPIRED".toLowerCase(Locale.forLanguageTag("tr-TR"))).isNotEqualTo("expired");
        assertThat(String.format(Locale.ROOT, "%05d", 42)).isEqualTo("00042");
    }
}
