package org.apache.kafka.controller;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Set;
import java.util.function.IntPredicate;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.EligibleLeaderReplicasVersion;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.storage.internals.log.LocalLog;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;

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

    /** The topic configs a partition change reads, at their defaults: min ISR 2, no
     *  unclean leader election. */
    private static final KafkaConfigSchema TOPIC_CONFIGS = new KafkaConfigSchema(
        Map.of(ConfigResource.Type.TOPIC, new ConfigDef()
            .define("min.insync.replicas", ConfigDef.Type.INT, 2, ConfigDef.Importance.HIGH, "")
            .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, false,
                    ConfigDef.Importance.HIGH, "")), Map.of());

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
            case "min-isr-change-keeps-elr": {
                // the ELR feature on; a topic's min.insync.replicas set: its ELRs cleared
                FeatureControlManager features = elrOn(null);
                ConfigurationControlManager configs = new ConfigurationControlManager.Builder()
                    .setKafkaConfigSchema(KafkaConfigSchema.EMPTY).setFeatureControl(features)
                    .build();
                return String.valueOf(configs.createClearElrRecordsAsNeeded(List.of(
                    new ApiMessageAndVersion(new ConfigRecord()
                        .setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName("t")
                        .setName("min.insync.replicas").setValue("1"), (short) 0))));
            }
            case "unclean-shutdown-taken-as-clean": {
                // ISR [1], ELR [2]: 2 shuts down uncleanly and leaves the ELR (no broker is
                // registered here, so the change also finds no leader for it)
                SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
                FeatureControlManager features = elrOn(registry);
                ClusterControlManager cluster = new ClusterControlManager.Builder()
                    .setClusterId("elr-harness-probe").setTime(Time.SYSTEM)
                    .setSnapshotRegistry(registry).setFeatureControlManager(features)
                    .setBrokerShutdownHandler((id, clean, records) -> { }).build();
                ReplicationControlManager replication = new ReplicationControlManager.Builder()
                    .setSnapshotRegistry(registry).setClusterControl(cluster)
                    .setConfigurationControl(new ConfigurationControlManager.Builder()
                        .setSnapshotRegistry(registry).setKafkaConfigSchema(TOPIC_CONFIGS)
                        .setFeatureControl(features).build())
                    .setFeatureControl(features).build();
                replication.replay(new TopicRecord().setName("t").setTopicId(TOPIC));
                replication.replay(new PartitionRecord().setTopicId(TOPIC).setPartitionId(0)
                    .setReplicas(List.of(1, 2, 3)).setIsr(List.of(1)).setEligibleLeaderReplicas(
                        List.of(2)).setLastKnownElr(List.of()).setLeader(1).setLeaderEpoch(5)
                    .setPartitionEpoch(7).setDirectories(List.of(Uuid.ZERO_UUID, Uuid.ZERO_UUID,
                        Uuid.ZERO_UUID)));
                List<ApiMessageAndVersion> records = new ArrayList<>();
                replication.handleBrokerShutdown(2, false, records);
                return String.valueOf(records);
            }
            case "leader-min-isr-of-one":
                return LeaderMinIsr.probe();
            case "stale-last-known-elr-at-level-0":
                // the ELR feature at level 0; leader 2, ISR [2], a LastKnownELR [1] kept
                // from level 1; 3 joins the ISR: the next change at level 0
                return build(partition(new int[] {2}, new int[] {}, new int[] {1}, 2),
                             Set.of(2, 3), 2, null, List.of(2, 3), true, false);
            case "stale-last-known-elr-when-the-leader-is-fenced":
                // ELR on; leader 2, ISR [2], ELR [3], a stale LastKnownELR [1]; 2 is fenced
                // and no one may lead: the partition goes leaderless
                return build(partition(new int[] {2}, new int[] {3}, new int[] {1}, 2),
                             Set.of(), 2, null, List.of(), true);
            default:
                return "no such probe";
        }
    }

    /** kafka.cluster.Partition's effective min ISR for a leader with two followers and
     *  min.insync.replicas 2: a Partition and a UnifiedLog are made without their
     *  constructors (they need a broker around them), with only the two fields the
     *  method reads set. */
    static final class LeaderMinIsr {
        static String probe() {
            try {
                Field theUnsafe = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                theUnsafe.setAccessible(true);
                sun.misc.Unsafe unsafe = (sun.misc.Unsafe) theUnsafe.get(null);
                Class<?> partitionClass = Class.forName("kafka.cluster.Partition");
                Object partition = unsafe.allocateInstance(partitionClass);
                ConcurrentHashMap<Object, Object> followers = new ConcurrentHashMap<>();
                followers.put(2, "follower");
                followers.put(3, "follower");
                set(partitionClass, partition, "remoteReplicasMap", followers);
                LocalLog local = (LocalLog) unsafe.allocateInstance(LocalLog.class);
                set(LocalLog.class, local, "config",
                    new LogConfig(Map.of("min.insync.replicas", "2")));
                UnifiedLog log = (UnifiedLog) unsafe.allocateInstance(UnifiedLog.class);
                set(UnifiedLog.class, log, "localLog", local);
                Method method = partitionClass.getDeclaredMethod("effectiveMinIsr",
                                                                 UnifiedLog.class);
                method.setAccessible(true);
                return "effectiveMinIsr=" + method.invoke(partition, log);
            } catch (ReflectiveOperationException e) {
                return "probe failed: " + e;
            }
        }

        static void set(Class<?> owner, Object target, String name, Object value)
                throws ReflectiveOperationException {
            Field field = owner.getDeclaredField(name);
            field.setAccessible(true);
            field.set(target, value);
        }
    }

    /** A controller's features with the newest production metadata version and the ELR
     *  feature's level 1 replayed (on `registry`,
     *  or a registry of its own). */
    static FeatureControlManager elrOn(SnapshotRegistry registry) {
        FeatureControlManager.Builder builder = new FeatureControlManager.Builder()
            .setQuorumFeatures(new QuorumFeatures(0,
                QuorumFeatures.defaultSupportedFeatureMap(true), List.of(0)));
        if (registry != null) {
            builder.setSnapshotRegistry(registry);
        }
        FeatureControlManager features = builder.build();
        features.replay(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
            .setFeatureLevel(MetadataVersion.latestProduction().featureLevel()));
        features.replay(new FeatureLevelRecord()
            .setName(EligibleLeaderReplicasVersion.FEATURE_NAME).setFeatureLevel((short) 1));
        return features;
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
        return build(partition, alive, minIsr, unclean, targetIsr, lastKnownLeader, true);
    }

    /** The same, the ELR feature on or (elrEnabled false) at level 0. */
    static String build(PartitionRegistration partition, Set<Integer> alive, int minIsr,
                        List<Integer> unclean, List<Integer> targetIsr,
                        boolean lastKnownLeader, boolean elrEnabled) {
        IntPredicate acceptable = alive::contains;
        PartitionChangeBuilder builder = new PartitionChangeBuilder(partition, TOPIC, 0,
            acceptable, MetadataVersion.latestProduction(), minIsr, elrEnabled)
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
