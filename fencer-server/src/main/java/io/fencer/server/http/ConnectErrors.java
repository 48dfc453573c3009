package io.fencer.server.http;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.fencer.api.v1.ErrorDetail;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.Base64;

/**
 * Connect's form of a failed call: a gRPC status (with its {@code google.rpc.Status} details, as the gRPC port sends
 * them in {@code grpc-status-details-bin}) as the HTTP status and JSON body the Connect protocol gives its code, e.g.
 * {@code 400 {"code": "failed_precondition", "message": "...", "details": [{"type": "fencer.v1.ErrorDetail",
 * "value": "<unpadded base64>", "debug": {...}}]}}.
 */
final class ConnectErrors {
    private static final Gson JSON = new GsonBuilder().disableHtmlEscaping().create();
    private static final JsonFormat.Printer DEBUG_PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();
    private static final Base64.Encoder UNPADDED = Base64.getEncoder().withoutPadding();
    private static final String TYPE_URL_PREFIX = "type.googleapis.com/";

    private ConnectErrors() {}

    /** A Connect error: the HTTP status and the JSON body. */
    record Answer(int httpStatus, String json) {}

    /** Returns the Connect error of a call that failed with {@code failure} (a status exception). */
    static Answer of(Throwable failure) {
        Status status = Status.fromThrowable(failure);
        JsonObject body = new JsonObject();
        body.addProperty("code", code(status.getCode()));
        String description = status.getDescription();
        body.addProperty("message", description == null ? "" : description);
        com.google.rpc.Status rich = richStatus(failure);
        if (rich != null && rich.getDetailsCount() > 0) {
            JsonArray details = new JsonArray();
            for (Any packed : rich.getDetailsList()) {
                details.add(detail(packed));
            }
            body.add("details", details);
        }
        return new Answer(httpStatus(status.getCode()), JSON.toJson(body) + "\n");
    }

    /** Returns a Connect error made here, of the HTTP layer, with no detail. */
    static Answer of(Status.Code code, String message) {
        JsonObject body = new JsonObject();
        body.addProperty("code", code(code));
        body.addProperty("message", message);
        return new Answer(httpStatus(code), JSON.toJson(body) + "\n");
    }

    private static com.google.rpc.Status richStatus(Throwable failure) {
        try {
            return StatusProto.fromThrowable(failure);
        } catch (IllegalArgumentException e) {
            return null; // a details trailer that does not match the status: send the code and message only
        }
    }

    private static JsonObject detail(Any packed) {
        String typeUrl = packed.getTypeUrl();
        JsonObject detail = new JsonObject();
        detail.addProperty("type", typeUrl.startsWith(TYPE_URL_PREFIX) ? typeUrl.substring(TYPE_URL_PREFIX.length())
                : typeUrl.substring(typeUrl.lastIndexOf('/') + 1));
        detail.addProperty("value", UNPADDED.encodeToString(packed.getValue().toByteArray()));
        if (packed.is(ErrorDetail.class)) {
            try {
                detail.add("debug", JsonParser.parseString(DEBUG_PRINTER.print(packed.unpack(ErrorDetail.class))));
            } catch (InvalidProtocolBufferException e) {
                // "debug" is optional, for people reading the wire: the value still carries the detail
            }
        }
        return detail;
    }

    /** Returns Connect's name of a gRPC code: its name in lower case, "canceled" spelled the American way. */
    static String code(Status.Code code) {
        return code == Status.Code.CANCELLED ? "canceled" : code.name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Returns the HTTP status the Connect protocol gives a code (connectrpc.com/docs/protocol#error-codes). */
    static int httpStatus(Status.Code code) {
        return switch (code) {
            case OK -> 200;
            case CANCELLED -> 499;
            case INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE -> 400;
            case DEADLINE_EXCEEDED -> 504;
            case NOT_FOUND -> 404;
            case ALREADY_EXISTS, ABORTED -> 409;
            case PERMISSION_DENIED -> 403;
            case RESOURCE_EXHAUSTED -> 429;
            case UNIMPLEMENTED -> 501;
            case UNAVAILABLE -> 503;
            case UNAUTHENTICATED -> 401;
            case UNKNOWN, INTERNAL, DATA_LOSS -> 500;
        };
    }
}
