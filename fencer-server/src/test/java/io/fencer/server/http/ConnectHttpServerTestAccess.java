package io.fencer.server.http;

import io.grpc.Status;

/** For the server tests of other packages: the HTTP status the HTTP port gives a gRPC code. */
public final class ConnectHttpServerTestAccess {
    private ConnectHttpServerTestAccess() {}

    public static int httpStatus(Status.Code code) {
        return ConnectErrors.httpStatus(code);
    }
}
