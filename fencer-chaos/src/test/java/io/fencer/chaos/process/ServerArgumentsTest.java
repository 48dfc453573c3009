package io.fencer.chaos.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.chaos.process.StoreServerArguments;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The servers' command lines as the harness writes them; the CLI's tests read them with the real commands. */
class ServerArgumentsTest {

    @Test
    void toArguments_groupOfThree_writesEveryOptionAsOneToken() {
        List<ServerArguments.Peer> peers = List.of(new ServerArguments.Peer("n1", "127.0.0.1", 7001, 7003),
                new ServerArguments.Peer("n2", "127.0.0.1", 7011, 7013),
                new ServerArguments.Peer("n3", "127.0.0.1", 7021, 7023));

        assertThat(new ServerArguments(Path.of("/d/n2"), 7011, 7012, 7013, "n2", peers, Path.of("/d/raft.secret"))
                .toArguments())
                .containsExactly("server", "--data=/d/n2", "--port=7011", "--admin-port=7012", "--raft-port=7013",
                        "--id=n2", "--http-port=0",
                        "--peers=n1=127.0.0.1:7001:7003,n2=127.0.0.1:7011:7013,n3=127.0.0.1:7021:7023",
                        "--raft-secret-file=/d/raft.secret");
    }

    @Test
    void toArguments_alone_writesNoPeers() {
        assertThat(new ServerArguments(Path.of("/d/n1"), 7001, 7002, 7003, "n1", List.of(), null).toArguments())
                .containsExactly("server", "--data=/d/n1", "--port=7001", "--admin-port=7002", "--raft-port=7003",
                        "--id=n1", "--http-port=0");
        assertThat(new StoreServerArguments(Path.of("/d/store"), 7080, -1).toArguments())
                .containsExactly("store-server", "--data=/d/store", "--port=7080", "--admin-port=-1",
                        "--http-port=0");
    }

    @Test
    void constructor_idNotAmongPeersOrSeparatorInAPeerOrNoSecretForAGroup_isRefused() {
        List<ServerArguments.Peer> peers = List.of(new ServerArguments.Peer("n1", "127.0.0.1", 7001, 7003));
        List<ServerArguments.Peer> two = List.of(peers.get(0), new ServerArguments.Peer("n2", "127.0.0.1", 7011, 7013));

        assertThatThrownBy(() -> new ServerArguments(Path.of("/d"), 7011, 7012, 7013, "n2", peers, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("server n2 is not among its peers");
        assertThatThrownBy(() -> new ServerArguments(Path.of("/d"), 7011, 7012, 7013, "n2", two, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("server n2 of a group of 2 needs a group secret file");
        assertThatThrownBy(() -> new ServerArguments.Peer("n1,n2", "127.0.0.1", 7001, 7003))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("peer id 'n1,n2' is empty or has '=' or ','");
        assertThatThrownBy(() -> new ServerArguments.Peer("n1", "::1", 7001, 7003))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("peer host '::1' is empty or has ':' or ','");
    }
}
