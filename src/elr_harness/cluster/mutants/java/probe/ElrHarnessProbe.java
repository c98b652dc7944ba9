package org.apache.kafka.controller;

import java.util.List;
import java.util.Set;
import java.util.function.IntPredicate;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * What a mutant's method does on one input, against the release (#54): each probe
 * runs the controller's own code on a fixed partition state and prints what it
 * decided, one line. Run on the release's libs/ and on the mutant's, the two lines
 * must differ, or the mutant cannot change behaviour (an equivalent mutant).
 *
 * In the controller's package, so that the package-private methods are reachable.
 * Compiled against the release's jars by `harness mutants build`.
 *
 * <pre>java -cp PROBE_DIR:LIBS/* org.apache.kafka.controller.ElrHarnessProbe NAME...</pre>
 */
public final class ElrHarnessProbe {
    private static final Uuid TOPIC = Uuid.fromString("ElrHarnessProbeTopic0A");

    private ElrHarnessProbe() {}

    public static void main(String[] args) {
        for (String name : args) {
            System.out.println(name + ": " + probe(name));
        }
    }

    static String probe(String name) {
        switch (name) {
            case "last-leader-while-elr-not-empty":
                // leaderless, ELR [2] (fenced, away), last known leader 1 (back, uncleanly)
                return build(partition(new int[] {}, new int[] {2}, new int[] {1}, -1),
                             Set.of(1), 2, null, List.of(), true);
            case "leader-from-any-replica-when-isr-empty":
                // leaderless, ISR and ELR empty; only 3, never eligible, is alive
                return build(partition(new int[] {}, new int[] {}, new int[] {}, -1),
                             Set.of(3), 2, null, List.of(), false);
            case "fenced-broker-elected":
                // leader 1 and the whole ISR fenced: no broker may lead
                return build(partition(new int[] {1, 2, 3}, new int[] {}, new int[] {}, 1),
                             Set.of(), 2, null, List.of(1, 2, 3), false);
            case "unclean-shutdown-kept-in-elr":
                // ISR [1, 2] shrinks to [1]; 2 shut down uncleanly
                return build(partition(new int[] {1, 2}, new int[] {}, new int[] {}, 1),
                             Set.of(1, 3), 2, List.of(2), List.of(1), false);
            case "elr-kept-at-min-isr":
                // ISR [1], ELR [2]; 3 joins: the ISR is back at min ISR 2
                return build(partition(new int[] {1}, new int[] {2}, new int[] {}, 1),
                             Set.of(1, 2, 3), 2, null, List.of(1, 3), false);
            case "last-known-leader-never-cleared":
                // leaderless, ELR [2], last known leader 1: 2 is elected from the ELR
                return build(partition(new int[] {}, new int[] {2}, new int[] {1}, -1),
                             Set.of(1, 2), 2, null, null, true);
            case "elr-forgets-its-members":
                // ISR [1], ELR [2]; 1 fenced away too (clean): the ISR empties
                return build(partition(new int[] {1}, new int[] {2}, new int[] {}, 1),
                             Set.of(), 2, null, List.of(), false);
            case "reassignment-completes-before-catch-up":
                // [1, 2, 3] to [2, 3, 4]: 4 is still copying, not in the ISR [1, 2, 3]
                return String.valueOf(new PartitionReassignmentReplicas(List.of(1), List.of(4),
                    List.of(2, 3, 4, 1)).maybeCompleteReassignment(List.of(1, 2, 3)));
            case "elr-on-whatever-the-feature":
                // a controller that never saw the ELR feature: its level is 0
                return "isElrFeatureEnabled=" + new FeatureControlManager.Builder().build()
                    .isElrFeatureEnabled();
            default:
                return "no such probe";
        }
    }

    static PartitionRegistration partition(int[] isr, int[] elr, int[] lastKnownElr, int leader) {
        return new PartitionRegistration.Builder()
            .setReplicas(new int[] {1, 2, 3})
            .setDirectories(new Uuid[] {Uuid.ZERO_UUID, Uuid.ZERO_UUID, Uuid.ZERO_UUID})
            .setIsr(isr).setElr(elr).setLastKnownElr(lastKnownElr)
            .setLeader(leader).setLeaderRecoveryState(LeaderRecoveryState.RECOVERED)
            .setLeaderEpoch(5).setPartitionEpoch(7).build();
    }

    /** The controller's change of `partition` (min ISR `minIsr`, ELR on), the brokers in
     *  `alive` acceptable as leaders; null `targetIsr`: the ISR unchanged. */
    static String build(PartitionRegistration partition, Set<Integer> alive, int minIsr,
                        List<Integer> unclean, List<Integer> targetIsr,
                        boolean lastKnownLeader) {
        IntPredicate acceptable = alive::contains;
        PartitionChangeBuilder builder = new PartitionChangeBuilder(partition, TOPIC, 0,
            acceptable, MetadataVersion.latestProduction(), minIsr, true)
            .setElection(PartitionChangeBuilder.Election.ONLINE)
            .setUseLastKnownLeaderInBalancedRecovery(lastKnownLeader)
            .setDefaultDirProvider(replica -> Uuid.ZERO_UUID);
        if (unclean != null) {
            builder.setUncleanShutdownReplicas(unclean);
        }
        if (targetIsr != null) {
            builder.setTargetIsr(targetIsr);
        }
        return builder.build().map(record -> record.message().toString()).orElse("no change");
    }
}
