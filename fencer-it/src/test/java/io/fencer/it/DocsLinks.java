package io.fencer.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.commonmark.ext.heading.anchor.IdGenerator;
import org.commonmark.node.AbstractVisitor;
import org.commonmark.node.Heading;
import org.commonmark.node.Link;
import org.commonmark.node.Node;
import org.commonmark.parser.Parser;
import org.commonmark.renderer.text.TextContentRenderer;

/**
 * The relative links of Markdown files, checked against what they point at: the file must exist, and a {@code #part}
 * of a Markdown file must name one of its headings by the id GitHub gives it (lower case, punctuation dropped, spaces
 * as hyphens, {@code -1}, {@code -2} … for repeats; commonmark's heading-anchor extension makes the same ids).
 */
final class DocsLinks {
    private static final Parser PARSER = Parser.builder().build();
    private static final TextContentRenderer TEXT = TextContentRenderer.builder().build();
    /** A link with a scheme (RFC 3986: a letter, then letters, digits, {@code + - .}, then a colon) leaves the tree. */
    private static final Pattern SCHEME = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*:");

    private final Path root;
    private final Map<Path, Set<String>> headingIds = new HashMap<>();
    private int anchorsChecked;

    /** Checks files under {@code root}, which the reports name them from. */
    DocsLinks(Path root) {
        this.root = root;
    }

    /** Returns a line for each broken link in {@code files}: the file, the link, and what is missing. */
    List<String> broken(List<Path> files) {
        List<String> broken = new ArrayList<>();
        for (Path file : files) {
            for (String link : links(file)) {
                String problem = problem(file, link);
                if (problem != null) {
                    broken.add(root.relativize(file) + ": (" + link + ") " + problem);
                }
            }
        }
        return broken;
    }

    /** Returns how many {@code #part}s the checks so far compared with a file's headings. */
    int anchorsChecked() {
        return anchorsChecked;
    }

    private String problem(Path file, String link) {
        if (SCHEME.matcher(link).find()) {
            return null; // http:, https:, mailto: — not this repository's to check
        }
        int hash = link.indexOf('#');
        String path = hash < 0 ? link : link.substring(0, hash);
        Path target = path.isEmpty() ? file : file.resolveSibling(path).normalize();
        if (!Files.exists(target)) {
            return "no file " + root.relativize(target);
        }
        if (hash < 0 || !target.toString().endsWith(".md")) {
            return null;
        }
        anchorsChecked++;
        String anchor = link.substring(hash + 1);
        return headingIds.computeIfAbsent(target, DocsLinks::headingIds).contains(anchor) ? null
                : "no heading with id '" + anchor + "' in " + root.relativize(target);
    }

    private static List<String> links(Path file) {
        List<String> links = new ArrayList<>();
        parse(file).accept(new AbstractVisitor() {
            @Override
            public void visit(Link link) {
                links.add(link.getDestination());
                visitChildren(link);
            }
        });
        return links;
    }

    private static Set<String> headingIds(Path file) {
        IdGenerator ids = IdGenerator.builder().build(); // one per document: it numbers the repeats
        Set<String> found = new HashSet<>();
        parse(file).accept(new AbstractVisitor() {
            @Override
            public void visit(Heading heading) {
                found.add(ids.generateId(TEXT.render(heading).strip()));
            }
        });
        return found;
    }

    private static Node parse(Path file) {
        try {
            return PARSER.parse(Files.readString(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }
}
