package example;

import io.fencer.core.FencingToken;
import io.fencer.spring.jdbc.SpringJdbcFence;
import java.time.LocalDate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class Reports {
    private final SpringJdbcFence fence;

    public Reports(SpringJdbcFence fence) {
        this.fence = fence;
    }

    @Transactional
    public void write(FencingToken token, LocalDate day, long total) {
        fence.executeUpdate(token, "INSERT INTO report(report_day, total) VALUES (?, ?)", day, total);
    }   // StaleTokenException once another node's run has written: rolled back, and the transaction cannot commit
}
