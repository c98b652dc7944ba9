// elr-harness's transactional client on Kafka's own kafka-clients (the jar of the
// Kafka under test; compiled against it by workloads/txn_jvm.py, cached by its hash).
//
// One JVM, N producer slots, each a thread that owns one KafkaProducer with its own
// transactional.id. Python plans every transaction and records its invoke first, then
// sends a command on stdin; the slot runs it and prints one JSON object per line on
// stdout, which Python records as the completion. With transaction.version 2
// finalized, the client speaks KIP-890's protocol by itself.
//
// stdin, one command a line:
//   init <slot>                                  make the slot's producer ready
//   txn <slot> <abort 0|1> <n> (<topic> <partition> <value>){n}
//   quit                                         close every producer and exit
// stdout, one JSON object a line (nothing else: the log goes to stderr):
//   {"event":"started","producers":N,"nanos":T}
//   {"event":"ready","slot":i}
//   {"event":"init_failed","slot":i,"error":E,"detail":D,"replaced":B}
//   {"event":"done","slot":i,"type":"ok|fail|info","end_time":T,"offsets":[...],
//    "error":E,"detail":D,"replaced":B}
//   {"event":"exit"}
// T is System.nanoTime(): CLOCK_MONOTONIC on Linux, the clock of Python's
// time.monotonic_ns(), so Python takes it onto the history's clock by subtracting
// the recorder's origin.
//
// Outcomes follow KafkaProducer's javadoc: a timed-out commit or abort is retried
// (safe, and no other operation may follow it); ProducerFenced, OutOfOrderSequence,
// Authorization and UnsupportedVersion errors (and the like) are fatal: close the
// producer; any other error is abortable: abortTransaction. `fail` only when the
// transaction certainly did not commit (no commit call was made, or the abort that
// followed an error returned); `info` whenever a commit call may have gone through.
// After `info` (and any close) the slot makes a new instance with the same
// transactional.id, whose initTransactions fences the old one.
package elrharness;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class TxnClient {
    private static PrintStream out;
    private static final String[] QUIT = {"quit"};

    public static void main(String[] args) throws Exception {
        // stdout carries the JSON lines alone: anything else printing there goes to stderr
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        System.setOut(System.err);
        if (args.length < 4) {
            System.err.println("usage: TxnClient <producers> <attempts> <txn-id-prefix> "
                               + "<close-ms> [key=value ...]");
            System.exit(2);
        }
        int producers = Integer.parseInt(args[0]);
        int attempts = Integer.parseInt(args[1]);
        String prefix = args[2];
        long closeMs = Long.parseLong(args[3]);
        Properties common = new Properties();
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            common.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        List<Slot> slots = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < producers; i++) {
            Properties props = new Properties();
            props.putAll(common);
            props.put("transactional.id", prefix + i);
            props.put("client.id", prefix + i);
            Slot slot = new Slot(i, props, attempts, closeMs);
            slots.add(slot);
            Thread thread = new Thread(slot, "txn-slot-" + i);
            threads.add(thread);
            thread.start();
        }
        emit(new Json().put("event", "started").put("producers", producers)
             .put("nanos", System.nanoTime()));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" +");
            if (words[0].equals("quit")) {
                break;
            }
            int index = words.length > 1 ? parseSlot(words[1], producers) : -1;
            if (index < 0 || !(words[0].equals("init") || words[0].equals("txn"))) {
                emit(new Json().put("event", "error").put("detail", "bad command: " + line));
                continue;
            }
            slots.get(index).commands.put(words);
        }
        for (Slot slot : slots) {
            slot.commands.put(QUIT);
        }
        for (Thread thread : threads) {
            thread.join();
        }
        emit(new Json().put("event", "exit"));
        out.flush();
        System.exit(0);
    }

    private static int parseSlot(String word, int producers) {
        try {
            int index = Integer.parseInt(word);
            return index >= 0 && index < producers ? index : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static synchronized void emit(Json json) {
        out.println(json.toString());
        out.flush();
    }

    /** The error's Kafka name (of it or its first cause that has one), else its class. */
    static String errorName(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            Errors known = Errors.forException(cause);
            if (known != Errors.UNKNOWN_SERVER_ERROR) {
                return known.name();
            }
        }
        return error.getClass().getSimpleName();
    }

    static String detail(Throwable error) {
        String text = error.getClass().getSimpleName() + ": " + error.getMessage();
        return text.length() > 300 ? text.substring(0, 300) : text;
    }

    /** The errors after which KafkaProducer's javadoc leaves only close(). */
    static boolean fatal(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof ProducerFencedException || cause instanceof InvalidProducerEpochException
                    || cause instanceof OutOfOrderSequenceException || cause instanceof AuthorizationException
                    || cause instanceof UnsupportedVersionException || cause instanceof InvalidTxnStateException
                    || cause instanceof IllegalStateException) {
                return true;
            }
        }
        return false;
    }

    static boolean timedOut(Throwable error) {
        return error instanceof TimeoutException || error instanceof InterruptException;
    }

    static final class Slot implements Runnable {
        final int index;
        final Properties props;
        final int attempts;
        final long closeMs;
        final BlockingQueue<String[]> commands = new LinkedBlockingQueue<>();
        KafkaProducer<byte[], byte[]> producer;
        boolean initialized;

        Slot(int index, Properties props, int attempts, long closeMs) {
            this.index = index;
            this.props = props;
            this.attempts = attempts;
            this.closeMs = closeMs;
        }

        @Override
        public void run() {
            try {
                while (true) {
                    String[] command = commands.take();
                    if (command == QUIT) {
                        close();
                        return;
                    }
                    if (command[0].equals("init")) {
                        init();
                    } else {
                        transaction(command);
                    }
                }
            } catch (InterruptedException e) {
                close();
            } catch (RuntimeException e) {
                // a bug of this program: say so, and let Python see the slot go quiet
                emit(new Json().put("event", "error").put("slot", index).put("detail", detail(e)));
                close();
            }
        }

        void init() {
            if (producer != null && initialized) {
                emit(new Json().put("event", "ready").put("slot", index));
                return;
            }
            try {
                if (producer == null) {
                    producer = new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
                }
                producer.initTransactions();
                initialized = true;
                emit(new Json().put("event", "ready").put("slot", index));
            } catch (KafkaException e) {
                // a timed-out init is safe to retry on the same instance; else a new one
                boolean replace = !timedOut(e);
                if (replace) {
                    close();
                }
                emit(new Json().put("event", "init_failed").put("slot", index)
                     .put("error", errorName(e)).put("detail", detail(e)).put("replaced", replace));
            }
        }

        void transaction(String[] words) {
            boolean abort = words[2].equals("1");
            int count = Integer.parseInt(words[3]);
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            if (producer == null || !initialized) {
                done("fail", -1, futures, "NOT_INITIALIZED", "no ready producer", false);
                return;
            }
            long endTime;
            try {
                producer.beginTransaction();
                for (int i = 0; i < count; i++) {
                    String topic = words[4 + 3 * i];
                    int partition = Integer.parseInt(words[5 + 3 * i]);
                    byte[] value = words[6 + 3 * i].getBytes(StandardCharsets.US_ASCII);
                    futures.add(producer.send(new ProducerRecord<>(topic, partition, null, value)));
                }
            } catch (KafkaException | IllegalStateException e) {
                // no commit call was made: the transaction cannot have committed
                if (fatal(e)) {
                    close();
                    done("fail", -1, futures, errorName(e), detail(e), true);
                    return;
                }
                endTime = System.nanoTime();
                Exception abortError = end(false);
                if (abortError != null) {
                    close();
                }
                done("fail", endTime, futures, errorName(e), detail(e), abortError != null);
                return;
            }
            endTime = System.nanoTime();
            if (abort) {
                Exception abortError = end(false);
                if (abortError == null) {
                    done("ok", endTime, futures, null, null, false);
                } else {  // aborted on purpose, never committed: closed, it stays uncommitted
                    close();
                    done("fail", endTime, futures, errorName(abortError), detail(abortError), true);
                }
                return;
            }
            Exception commitError = end(true);
            if (commitError == null) {
                done("ok", endTime, futures, null, null, false);
            } else if (timedOut(commitError) || fatal(commitError)) {
                close();  // the commit may have gone through
                done("info", endTime, futures, errorName(commitError), detail(commitError), true);
            } else {
                Exception abortError = end(false);
                if (abortError == null) {  // the abort returned: it did not commit
                    done("fail", endTime, futures, errorName(commitError), detail(commitError), false);
                } else {
                    close();
                    done("info", endTime, futures, errorName(commitError), detail(commitError), true);
                }
            }
        }

        /** commitTransaction or abortTransaction, again while it times out; null when it returned. */
        Exception end(boolean commit) {
            Exception last = null;
            for (int attempt = 0; attempt < attempts; attempt++) {
                try {
                    if (commit) {
                        producer.commitTransaction();
                    } else {
                        producer.abortTransaction();
                    }
                    return null;
                } catch (KafkaException e) {
                    last = e;
                    if (!timedOut(e)) {
                        return e;
                    }
                } catch (IllegalStateException e) {
                    return e;
                }
            }
            return last;
        }

        void done(String type, long endTime, List<Future<RecordMetadata>> futures, String error,
                  String detail, boolean replaced) {
            Json json = new Json().put("event", "done").put("slot", index).put("type", type);
            if (endTime >= 0) {
                json.put("end_time", endTime);
            }
            json.putOffsets(offsets(futures));
            if (error != null) {
                json.put("error", error).put("detail", detail);
            }
            emit(json.put("replaced", replaced));
        }

        static List<Long> offsets(List<Future<RecordMetadata>> futures) {
            List<Long> offsets = new ArrayList<>();
            for (Future<RecordMetadata> future : futures) {
                Long offset = null;
                if (future.isDone()) {
                    try {
                        long found = future.get().offset();
                        offset = found >= 0 ? found : null;
                    } catch (Exception e) {
                        offset = null;
                    }
                }
                offsets.add(offset);
            }
            return offsets;
        }

        void close() {
            if (producer != null) {
                try {
                    producer.close(Duration.ofMillis(closeMs));
                } catch (RuntimeException e) {
                    System.err.println("slot " + index + ": close failed: " + detail(e));
                }
            }
            producer = null;
            initialized = false;
        }
    }

    /** A JSON object written by hand: kafka-clients brings no JSON library. */
    static final class Json {
        private final StringBuilder text = new StringBuilder("{");

        private StringBuilder key(String name) {
            if (text.length() > 1) {
                text.append(',');
            }
            return quote(text, name).append(':');
        }

        Json put(String name, String value) {
            if (value == null) {
                key(name).append("null");
            } else {
                quote(key(name), value);
            }
            return this;
        }

        Json put(String name, long value) {
            key(name).append(value);
            return this;
        }

        Json put(String name, boolean value) {
            key(name).append(value);
            return this;
        }

        Json putOffsets(List<Long> offsets) {
            StringBuilder list = key("offsets").append('[');
            for (int i = 0; i < offsets.size(); i++) {
                list.append(i > 0 ? "," : "").append(offsets.get(i) == null ? "null" : offsets.get(i).toString());
            }
            list.append(']');
            return this;
        }

        static StringBuilder quote(StringBuilder into, String value) {
            into.append('"');
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '"' || c == '\\') {
                    into.append('\\').append(c);
                } else if (c < 0x20 || c == 0x7f || (c >= 0xd800 && c <= 0xdfff)) {
                    into.append(String.format("\\u%04x", (int) c));
                } else {
                    into.append(c);
                }
            }
            return into.append('"');
        }

        @Override
        public String toString() {
            return text.toString() + "}";
        }
    }
}
