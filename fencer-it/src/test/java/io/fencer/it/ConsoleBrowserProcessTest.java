package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.testing.FreePorts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.Keys;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The web console in a real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}, driven by
 * Selenium): a lock held by a {@code fencer lock acquire} process shows with its token and the CLI waiter behind it;
 * revoked from the page (keyboard only, confirming the dialog), the page shows the waiter's grant under a higher token
 * and the revoke in its event feed; when the revoked holder's token then writes to the store after the next holder's,
 * the feed shows that refused write with both tokens. A lock named {@code <script>alert(1)</script>} is shown as that text, and no
 * script of it runs. Saves the page as {@code target/console.png} (docs/console.png is a copy).
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class ConsoleBrowserProcessTest {
    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    private static final Duration PATIENCE = Duration.ofSeconds(30);
    private static final String SCRIPT_NAME = "<script>alert(1)</script>";

    @TempDir
    Path dir;
    private FencerProcess server;
    private FencerProcess holder;
    private FencerProcess waiter;
    private FencerClient fencer;
    private WebDriver browser;
    private int httpPort;
    private String endpoint;

    /** Installs Chromium and its driver when absent (the machine and CI run as root); fails saying how otherwise. */
    @BeforeAll
    static void chromium() throws Exception {
        if (Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER)) {
            return;
        }
        Process install = new ProcessBuilder("sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive"
                + " apt-get install -y -qq chromium chromium-driver").inheritIO().start();
        boolean ended = install.waitFor(10, TimeUnit.MINUTES);
        assertThat(Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER))
                .as("this test needs %s and %s: `apt-get install -y chromium chromium-driver` %s; install them as"
                        + " root and run it again", CHROMIUM, CHROMEDRIVER, ended ? "exited " + install.exitValue()
                        : "did not finish in 10 minutes")
                .isTrue();
    }

    @BeforeEach
    void start() throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        httpPort = FreePorts.choose(1)[0];
        server = FencerProcess.server("server", dir.resolve("data"), ports, "--http-port", Integer.toString(httpPort));
        server.awaitHealthy(ports.admin());
        endpoint = ports.endpoint();
        fencer = Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(PATIENCE).build();
        await().atMost(PATIENCE).ignoreExceptions().until(() -> fencer.status().groupFormatLevel() == 5);
        holder = FencerProcess.start("holder", dir, List.of("lock", "acquire", "orders", "--ttl", "30s",
                "--server", ports.endpoint()));
        // The waiter starts once the holder holds: started together, either JVM could be first to the lock.
        holder.awaitLine(PATIENCE);
        waiter = FencerProcess.start("waiter", dir, List.of("lock", "acquire", "orders", "--ttl", "30s",
                "--wait", "60s", "--server", ports.endpoint()));
        browser = headlessChromium();
    }

    @AfterEach
    void stop() {
        if (browser != null) {
            browser.quit();
        }
        for (FencerProcess process : new FencerProcess[] {waiter, holder}) {
            if (process != null) {
                process.close();
            }
        }
        if (fencer != null) {
            fencer.close();
        }
        server.close();
    }

    @Test
    void console_showsTheCliHolderAndItsWaiter_revokedFromThePage_showsTheNextGrantWithAHigherToken()
            throws Exception {
        String heldSequencer = holder.awaitLine(PATIENCE).split(" ")[1];
        FencingToken held = FencingToken.parse(heldSequencer);
        await().atMost(PATIENCE).until(() -> fencer.describe("orders").waiterSessionIds().size() == 1);
        try (Session other = fencer.openSession(Duration.ofSeconds(30));
                Grant script = other.lock(SCRIPT_NAME).acquire(PATIENCE)) {
            browser.get("http://127.0.0.1:" + httpPort + "/console");

            awaitRow("orders", held.value());
            assertThat(fresh(() -> cell(row("orders"), "waiters"))).startsWith("session ");
            awaitRow(SCRIPT_NAME, script.token().value());
            assertThat(fresh(() -> cell(row(SCRIPT_NAME), "name"))).as("the name is shown as text")
                    .isEqualTo(SCRIPT_NAME);
            assertThatThrownBy(() -> browser.switchTo().alert()).as("no script of a name ran")
                    .isInstanceOf(NoAlertPresentException.class);

            // Without the mouse: keys to the button, then the confirmation.
            fresh(() -> {
                row("orders").findElement(By.cssSelector("button.revoke")).sendKeys(Keys.ENTER);
                return null;
            });
            assertThat(browser.switchTo().alert().getText()).contains("Revoke orders#" + held.value());
            browser.switchTo().alert().accept();

            String nextSequencer = waiter.awaitLine(PATIENCE).split(" ")[1];
            FencingToken next = FencingToken.parse(nextSequencer);
            assertThat(next.value()).isGreaterThan(held.value());
            awaitRow("orders", next.value());
            assertThat(fresh(() -> cell(row("orders"), "waiters"))).isEqualTo("none");
            await().atMost(PATIENCE).until(() -> browser.findElement(By.id("events")).getText()
                    .contains("released orders#" + held.value()));
            assertThat(browser.findElement(By.id("events")).getText())
                    .contains("(revoked) by anonymous", "granted orders#" + next.value());
            assertThat(browser.findElement(By.id("status")).getText()).contains("Revoked orders#" + held.value());

            // The next holder writes to scope orders, then the revoked holder's token is refused: the feed shows it.
            try (FencedStore store = Fencer.newStoreBuilder().endpoint(endpoint).callTimeout(PATIENCE).build()) {
                store.put("orders", "order-17", "written by the next holder", nextSequencer);
                assertThatThrownBy(() -> store.put("orders", "order-17", "written by the revoked holder",
                        heldSequencer))
                        .isInstanceOf(StaleTokenException.class);
            }
            String refusal = "refused write to orders: token orders#" + held.value() + " < accepted orders#"
                    + next.value() + " (stale_token)";
            await().atMost(PATIENCE).pollInterval(Duration.ofMillis(200)).until(() -> browser
                    .findElement(By.id("events")).getText().contains(refusal));
            screenshot();

            // A narrow window (a phone's width): the page does not overflow it; a wide table scrolls in its own box.
            browser.manage().window().setSize(new Dimension(360, 800));
            Object overflow = ((ChromeDriver) browser).executeScript(
                    "return document.documentElement.scrollWidth - document.documentElement.clientWidth;");
            assertThat(((Number) overflow).longValue()).as("horizontal overflow in px at 360 px wide")
                    .isLessThanOrEqualTo(0);

            // More locks than the page shows (200): it says so.
            List<io.fencer.client.FencedMultiLock.MultiGrant> many = new java.util.ArrayList<>();
            for (int first = 0; first < 256; first += 64) {
                int from = first;
                many.add(other.locks(java.util.stream.IntStream.range(from, from + 64)
                        .mapToObj(i -> String.format(java.util.Locale.ROOT, "many/%03d", i)).toArray(String[]::new))
                        .acquire(PATIENCE));
            }
            await().atMost(PATIENCE).until(() -> browser.findElement(By.id("locks-note")).getText()
                    .startsWith("Showing the first 200 locks"));
            for (io.fencer.client.FencedMultiLock.MultiGrant grant : many) {
                grant.close();
            }
        }
    }

    /** Waits until the page shows {@code lock}'s row with {@code token}. */
    private void awaitRow(String lock, long token) {
        await().atMost(PATIENCE).pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() ->
                cell(row(lock), "token").equals(Long.toString(token)));
    }

    /** Reads the page again while a redraw replaced the elements being read (the table redraws when it changes). */
    private static <T> T fresh(java.util.concurrent.Callable<T> read) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                return read.call();
            } catch (StaleElementReferenceException e) {
                if (attempt == 5) {
                    throw e;
                }
            }
        }
    }

    private WebElement row(String lock) {
        for (WebElement row : browser.findElements(By.cssSelector("#locks tbody tr"))) {
            if (lock.equals(row.getDomAttribute("data-lock"))) {
                return row;
            }
        }
        throw new AssertionError("no row of lock " + lock);
    }

    private static String cell(WebElement row, String column) {
        return row.findElement(By.cssSelector("td." + column)).getText();
    }

    private WebDriver headlessChromium() {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=900,1000", "--lang=en-US");
        // a FreePorts port, not Selenium's own choice: that is drawn from the same range below the ephemeral ports,
        // unclaimed, and could be a port a peer of another test was handed and has not bound yet
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingPort(FreePorts.one()).build();
        return new ChromeDriver(service, options);
    }

    /**
     * Saves the page to target/console.png, never into the sources: a run must not change a tracked file. The
     * picture in docs/console.png is a copy of it, made by hand when the page changes.
     */
    private void screenshot() throws IOException {
        byte[] png = ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES);
        Path target = Path.of(System.getProperty("user.dir"), "target");
        Files.createDirectories(target);
        Files.write(target.resolve("console.png"), png);
    }
}
