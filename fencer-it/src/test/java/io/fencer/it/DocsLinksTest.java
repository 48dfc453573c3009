package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The links of the README, the docs and the modules' pages lead somewhere: to a file of the repository, and to a
 * heading of it.
 */
class DocsLinksTest {

    @Test
    void readmeAndDocs_everyRelativeLink_pointsAtAnExistingFileAndHeading() throws IOException {
        Path root = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
        List<Path> files = new ArrayList<>();
        files.add(root.resolve("README.md"));
        try (Stream<Path> docs = Files.list(root.resolve("docs")); Stream<Path> modules = Files.list(root)) {
            docs.filter(path -> path.toString().endsWith(".md")).sorted().forEach(files::add);
            modules.map(module -> module.resolve("README.md")).filter(Files::isRegularFile).sorted()
                    .forEach(files::add); // each module's own page
        }
        DocsLinks links = new DocsLinks(root);

        assertThat(links.broken(files)).isEmpty();
        assertThat(files).hasSizeGreaterThan(20);
        assertThat(links.anchorsChecked()).as("links to a heading, checked").isGreaterThan(200);
    }

    @Test
    void broken_missingFileOrHeading_namesTheLinkAndWhatIsMissing(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("target.md"), "# Target\n\n## Two words, `code` and more!\n\n## Again\n\n## Again\n");
        Path source = Files.writeString(dir.resolve("source.md"), String.join("\n",
                "[ok](target.md#target) [ok](target.md#two-words-code-and-more) [ok](target.md#again-1)",
                "[ok](#local) [ok](https://example.com/x#y) `[not a link](nowhere.md)`",
                "[gone](target.md#again-2) [gone](missing.md) [gone](#elsewhere)",
                "",
                "## Local",
                "```",
                "[in a code block](nowhere.md)",
                "```",
                ""));

        List<String> broken = new DocsLinks(dir).broken(List.of(source));

        assertThat(broken).containsExactly(
                "source.md: (target.md#again-2) no heading with id 'again-2' in target.md",
                "source.md: (missing.md) no file missing.md",
                "source.md: (#elsewhere) no heading with id 'elsewhere' in source.md");
    }
}
