package example;

import io.fencer.spring.shedlock.FencedJobs;
import java.time.LocalDate;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

@Component
public class NightlyReport {
    private final Reports reports;

    public NightlyReport(Reports reports) {
        this.reports = reports;
    }

    @Scheduled(cron = "0 0 2 * * *")
    @SchedulerLock(name = "nightly-report", lockAtMostFor = "PT30S")   // the lease: renewed while the job runs
    public void run() {
        reports.write(FencedJobs.currentToken(), LocalDate.now(), 42);   // this run's token
    }
}
