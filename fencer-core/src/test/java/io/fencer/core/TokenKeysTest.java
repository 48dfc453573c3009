package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenKeysTest {
    private static final String KEY_A = Base64.getEncoder().encodeToString("0123456789abcdef".getBytes());
    private static final String KEY_B = Base64.getEncoder().encodeToString("fedcba9876543210XY".getBytes());

    @Test
    void load_withCommentsAndBlankLines_firstKeySignsAllVerify(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("keys");
        Files.writeString(file, "# rotation in progress\n\nk2=" + KEY_B + "\n  # old key\nk1 = " + KEY_A + "\n");
        TokenKeys keys = TokenKeys.load(file);
        assertThat(keys.signingKeyId()).isEqualTo("k2");
        assertThat(keys.keyIds()).containsExactly("k2", "k1");
    }

    @Test
    void toKeyFile_roundTripsThroughParse() {
        TokenKeys keys = TokenKeys.generate("new").plus(TokenKeys.generate("old"));
        TokenKeys parsed = TokenKeys.parse(keys.toKeyFile(), "generated");
        FencingToken token = new FencingToken("orders", 7);
        assertThat(parsed.keyIds()).containsExactly("new", "old");
        assertThat(parsed.mac("new", token)).isEqualTo(keys.mac("new", token));
        assertThat(parsed.mac("old", token)).isEqualTo(keys.mac("old", token));
    }

    @Test
    void parse_urlSafeBase64Key_isAccepted() {
        byte[] key = new byte[24];
        java.util.Arrays.fill(key, (byte) 0xfb); // encodes with '-' and '_' in the url alphabet
        TokenKeys keys = TokenKeys.parse("k=" + Base64.getUrlEncoder().encodeToString(key), "inline");
        assertThat(keys.mac("k", new FencingToken("a", 1))).isEqualTo(TokenKeys.of("k", key)
                .mac("k", new FencingToken("a", 1)));
    }

    @Test
    void parse_shortKey_isRefusedNamingLineNotKey() {
        String shortKey = Base64.getEncoder().encodeToString("tooshort".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> TokenKeys.parse("k1=" + KEY_A + "\nk2=" + shortKey, "keys.txt"))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("tokenKeys");
                    assertThat(e.value()).isEqualTo("keys.txt:2");
                })
                .hasMessageContaining("line 2").hasMessageContaining("8 bytes, fewer than the 16")
                .hasMessageNotContaining(shortKey);
    }

    @Test
    void parse_badKeyIds_areRefusedNamingLine() {
        assertThatThrownBy(() -> TokenKeys.parse("bad.id=" + KEY_A, "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("f line 1")
                .hasMessageContaining("bad.id");
        assertThatThrownBy(() -> TokenKeys.parse("=" + KEY_A, "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("key id ''");
        assertThatThrownBy(() -> TokenKeys.parse("k".repeat(33) + "=" + KEY_A, "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("1 to 32");
    }

    @Test
    void parse_malformedLines_areRefusedNamingLine() {
        assertThatThrownBy(() -> TokenKeys.parse("# c\nk1 MDEyMzQ1Njc4OWFiY2RlZg", "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("line 2: expected kid=base64(key)");
        assertThatThrownBy(() -> TokenKeys.parse("k1=" + KEY_A + "\nk1=" + KEY_B, "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("line 2: key id 'k1' appears twice");
        assertThatThrownBy(() -> TokenKeys.parse("k1=not base64!", "f"))
                .isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("line 1: the key of 'k1' is not base64");
        assertThatThrownBy(() -> TokenKeys.parse("# only a comment\n\n", "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("holds no key");
    }

    @Test
    void parse_tooManyKeys_isRefused() {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i <= TokenKeys.KEYS_MAX; i++) {
            text.append("k").append(i).append('=').append(KEY_A).append('\n');
        }
        assertThatThrownBy(() -> TokenKeys.parse(text.toString(), "f"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("line 65: more than 64 keys");
    }

    @Test
    void load_oversizedFile_isRefused(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("big");
        Files.writeString(file, "#".repeat(TokenKeys.FILE_BYTES_MAX + 1));
        assertThatThrownBy(() -> TokenKeys.load(file))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("more than the 65536 allowed");
    }

    @Test
    void generate_makesDistinctKeys_andToStringHidesThem() {
        TokenKeys a = TokenKeys.generate("k");
        TokenKeys b = TokenKeys.generate("k");
        FencingToken token = new FencingToken("orders", 1);
        assertThat(a.mac("k", token)).isNotEqualTo(b.mac("k", token)).hasSize(32);
        String keyText = a.toKeyFile().lines().filter(l -> l.startsWith("k=")).findFirst().orElseThrow().substring(2);
        assertThat(a.toString()).contains("k").doesNotContain(keyText);
    }

    @Test
    void of_invalidArguments_failFast() {
        assertThatThrownBy(() -> TokenKeys.of("k", new byte[15])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("15 bytes");
        assertThatThrownBy(() -> TokenKeys.of("k k", new byte[16])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> TokenKeys.generate("a").plus(TokenKeys.generate("a")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a' is in both");
    }

    @Test
    void mac_isHmacSha256OverVersionLockAndValue() throws Exception {
        byte[] key = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(key, "HmacSHA256"));
        byte[] message = java.nio.ByteBuffer.allocate(7 + 1 + 6 + 1 + 8).put("fencer1".getBytes())
                .put((byte) 0).put("orders".getBytes()).put((byte) 0).putLong(258).array();
        assertThat(TokenKeys.of("k", key).mac("k", new FencingToken("orders", 258))).isEqualTo(mac.doFinal(message));
        assertThat(TokenKeys.of("k", key).mac("other", new FencingToken("orders", 258))).isNull();
    }
}
