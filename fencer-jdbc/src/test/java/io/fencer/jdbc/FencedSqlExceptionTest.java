package io.fencer.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import java.sql.SQLException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Which failures of a COMMIT are the database's refusal (rolled back) and which leave the outcome unknown. */
class FencedSqlExceptionTest {
    private static final FencingToken TOKEN = new FencingToken("orders", 7);

    @ParameterizedTest
    @ValueSource(strings = {"23505", "23503", "23000", "40001", "40P01", "40002"})
    void commitFailed_integrityOrRollbackState_isRolledBack(String state) {
        FencedSqlException failure = FencedSqlException.commitFailed(TOKEN, new SQLException("refused", state));

        assertThat(failure.outcomeUnknown()).isFalse();
        assertThat(failure).hasMessageContaining("refused the commit").hasMessageContaining(state);
    }

    @ParameterizedTest
    @NullSource
    @ValueSource(strings = {"08006", "08003", "08S01", "08000", "57P01", "HY000", "XX000", "53100", ""})
    void commitFailed_connectionOrOtherState_isOutcomeUnknown(String state) {
        FencedSqlException failure = FencedSqlException.commitFailed(TOKEN, new SQLException("lost", state));

        assertThat(failure.outcomeUnknown()).isTrue();
        assertThat(failure).hasMessageContaining("may or may not have been committed");
    }
}
