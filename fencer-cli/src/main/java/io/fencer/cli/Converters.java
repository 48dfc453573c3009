package io.fencer.cli;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import io.fencer.server.ServerConfig;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The picocli converters of the command's own argument types. A conversion failure is a usage error (exit 2)
 * whose message names the offending text.
 */
final class Converters {
    private Converters() {}

    /** Converts {@code host:port} (an IPv6 host in brackets) to itself after checking it. */
    static final class Endpoint implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            int colon = value.lastIndexOf(':');
            if (colon <= 0 || colon == value.length() - 1) {
                throw new TypeConversionException("'" + value + "' is not host:port");
            }
            String host = value.substring(0, colon);
            if (host.contains(":") && !(host.startsWith("[") && host.endsWith("]"))) {
                throw new TypeConversionException("'" + value + "' is not host:port (write IPv6 hosts in brackets)");
            }
            checkPort(value, value.substring(colon + 1), 1);
            return value;
        }
    }

    /** Converts {@code id=host:port[:raftPort]} to a {@link ServerConfig.Peer}. */
    static final class Peer implements ITypeConverter<ServerConfig.Peer> {
        @Override
        public ServerConfig.Peer convert(String value) {
            ServerConfig.Peer peer;
            try {
                peer = ServerConfig.Peer.parse(value);
            } catch (IllegalArgumentException | InvalidArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
            checkPort(value, Integer.toString(peer.port()), 1);
            boolean raftPortGiven = value.substring(value.indexOf('=') + 1).split(":", -1).length == 3;
            if (!raftPortGiven && peer.raftPort() > 65_535) {
                // Port + 2 of a port near the top: the number was never given, so say where it comes from.
                throw new TypeConversionException("'" + value + "' has a Raft port " + peer.raftPort()
                        + " (port + 2, as none was given) outside [1, 65535]: give it, as ID=HOST:PORT:RAFTPORT");
            }
            checkPort(value, Integer.toString(peer.raftPort()), 1);
            return peer;
        }
    }

    /** Converts a lock name after checking it as the service would (1 to 256 bytes of UTF-8, no controls). */
    static final class LockName implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            try {
                return LockNames.check(value);
            } catch (InvalidArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /** Converts an exit status that the caller chooses for one of fencer's own outcomes: 0 to 255, as a shell's. */
    static final class ExitCode implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int code;
            try {
                code = Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new TypeConversionException("'" + value + "' is not a number");
            }
            if (code < 0 || code > 255) {
                throw new TypeConversionException("'" + value + "' is outside [0, 255]");
            }
            return code;
        }
    }

    /** Checks a port number in [{@code lowest}, 65535], naming {@code text} when it is not. */
    static int checkPort(String text, String port, int lowest) {
        int number;
        try {
            number = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + text + "' has a port that is not a number: '" + port + "'");
        }
        if (number < lowest || number > 65_535) {
            throw new TypeConversionException("'" + text + "' has port " + number + ", outside ["
                    + lowest + ", 65535]");
        }
        return number;
    }
}
