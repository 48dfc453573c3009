package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.fencer.api.v1.ErrorDetail;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import javax.net.ssl.SSLContext;

/**
 * A plain HTTP client of the HTTP port (the JDK's {@code java.net.http}, no Connect library): posts JSON or binary
 * bodies and reads Connect answers and errors as any HTTP client would.
 */
final class ConnectCalls {
    static final Duration CALL_MAX = Duration.ofSeconds(20);
    private final HttpClient client;
    private final String base;

    ConnectCalls(int port) {
        this(HttpClient.newBuilder().connectTimeout(CALL_MAX).build(), "http://127.0.0.1:" + port);
    }

    ConnectCalls(HttpClient client, String base) {
        this.client = client;
        this.base = base;
    }

    static ConnectCalls https(int port, SSLContext context) {
        return new ConnectCalls(HttpClient.newBuilder().sslContext(context).connectTimeout(CALL_MAX).build(),
                "https://127.0.0.1:" + port);
    }

    /** An HTTP answer. */
    record Reply(int status, String contentType, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        JsonObject json() {
            return JsonParser.parseString(text()).getAsJsonObject();
        }

        /** Returns the Connect error's code, checking the error's shape on the way. */
        String errorCode() {
            assertThat(contentType).as("content type of an error: %s", text()).startsWith("application/json");
            JsonObject error = json();
            assertThat(error.has("code")).as("a Connect error has a code: %s", text()).isTrue();
            return error.get("code").getAsString();
        }

        /** Returns the ErrorDetail of a Connect error, decoded from its base64 value (not from "debug"). */
        ErrorDetail detail() {
            JsonArray details = json().getAsJsonArray("details");
            assertThat(details).as("details of %s", text()).isNotNull().hasSize(1);
            JsonObject detail = details.get(0).getAsJsonObject();
            assertThat(detail.get("type").getAsString()).isEqualTo("fencer.v1.ErrorDetail");
            String value = detail.get("value").getAsString();
            assertThat(value).as("unpadded base64").doesNotEndWith("=");
            try {
                return ErrorDetail.parseFrom(Base64.getDecoder().decode(value));
            } catch (InvalidProtocolBufferException e) {
                throw new AssertionError("the detail does not parse: " + text(), e);
            }
        }

        /** Returns the "debug" object of the error's detail. */
        JsonElement debug() {
            return json().getAsJsonArray("details").get(0).getAsJsonObject().get("debug");
        }
    }

    Reply post(String path, String contentType, byte[] body, Map<String, String> headers) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(CALL_MAX)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (contentType != null) {
            request.header("Content-Type", contentType);
        }
        headers.forEach(request::header);
        return send(request.build());
    }

    Reply send(HttpRequest request) {
        try {
            HttpResponse<byte[]> response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
            return new Reply(response.statusCode(), response.headers().firstValue("Content-Type").orElse(""),
                    response.body());
        } catch (IOException e) {
            throw new AssertionError("HTTP call " + request.uri() + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Posts {@code json} to {@code /fencer.v1.<method>} with the Connect headers. */
    Reply json(String method, String json) {
        return post("/fencer.v1." + method, "application/json", json.getBytes(StandardCharsets.UTF_8),
                Map.of("Connect-Protocol-Version", "1"));
    }

    /** Posts {@code request} in its proto3 JSON to {@code /fencer.v1.<method>}. */
    Reply json(String method, Message request) {
        try {
            return json(method, JsonFormat.printer().print(request));
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }

    /** Posts {@code request} in binary to {@code /fencer.v1.<method>}. */
    Reply proto(String method, Message request) {
        return post("/fencer.v1." + method, "application/proto", request.toByteArray(),
                Map.of("Connect-Protocol-Version", "1"));
    }

    /** Returns a successful JSON answer as a message like {@code prototype}. */
    @SuppressWarnings("unchecked")
    static <T extends Message> T parseJson(Reply reply, T prototype) {
        assertThat(reply.status()).as("status of %s", reply.text()).isEqualTo(200);
        assertThat(reply.contentType()).isEqualTo("application/json");
        Message.Builder builder = prototype.newBuilderForType();
        try {
            JsonFormat.parser().merge(reply.text(), builder);
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError("not JSON of " + prototype.getDescriptorForType().getFullName() + ": "
                    + reply.text(), e);
        }
        return (T) builder.build();
    }

    /** Returns a successful binary answer as a message like {@code prototype}. */
    @SuppressWarnings("unchecked")
    static <T extends Message> T parseProto(Reply reply, T prototype) {
        assertThat(reply.status()).as("status of %s", reply.text()).isEqualTo(200);
        assertThat(reply.contentType()).isEqualTo("application/proto");
        try {
            return (T) prototype.getParserForType().parseFrom(reply.body());
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError("not binary " + prototype.getDescriptorForType().getFullName(), e);
        }
    }
}
