package io.fencer.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The repository's README.md, read by the tests that run its examples as written. */
final class Readme {
    private Readme() {}

    /** Returns the README: the module's tests run in {@code fencer-it}, beside it. */
    static String text() {
        Path readme = Path.of(System.getProperty("user.dir")).toAbsolutePath().resolveSibling("README.md");
        try {
            return Files.readString(readme);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + readme, e);
        }
    }

    /** Returns the fenced blocks of {@code language} in the section headed {@code ## heading}, in order. */
    static List<String> blocks(String heading) {
        return blocks(heading, "java");
    }

    static List<String> blocks(String heading, String language) {
        String text = text();
        int start = text.indexOf("\n## " + heading + "\n");
        if (start < 0) {
            throw new AssertionError("the README has no section '## " + heading + "'");
        }
        int end = text.indexOf("\n## ", start + 4);
        String section = text.substring(start, end < 0 ? text.length() : end);
        List<String> blocks = new ArrayList<>();
        String fence = "```" + language + "\n";
        for (int at = section.indexOf(fence); at >= 0; at = section.indexOf(fence, at)) {
            int close = section.indexOf("\n```", at + fence.length());
            blocks.add(section.substring(at + fence.length(), close + 1));
            at = close + 4;
        }
        return blocks;
    }
}
