package io.fencer.testing;

import java.io.IOException;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Another test JVM, as a module's second surefire fork is: chooses the number of ports its argument gives, prints them
 * on one line ({@code ports 20001,20017,...}) and keeps them until its standard input closes or it is killed.
 */
public final class PortClaimer {
    private PortClaimer() {}

    public static void main(String[] args) throws IOException {
        int[] ports = FreePorts.choose(Integer.parseInt(args[0]));
        System.out.println("ports " + Arrays.stream(ports).mapToObj(Integer::toString)
                .collect(Collectors.joining(",")));
        System.out.flush();
        while (System.in.read() != -1) {
            // holds its claims while the test runs
        }
    }
}
