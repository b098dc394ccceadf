package throttler.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * The Kafka Streams reference of {@code throttler bench}: the least a user
 * would write in Kafka Streams for the pipeline's job. It parses each
 * record's JSON value with Jackson, adds the header {@code decision}
 * ({@code passed} when the event's {@code score} is at least 0.5, else
 * {@code rejected}; {@code bad} for a value that is not a JSON object) and
 * sends the record to the passed topic or, otherwise, to the rejected one.
 *
 * <p>Arguments: {@code BOOTSTRAP THREADS GUARANTEE STATE_DIR}. The bench
 * drives it through stdin, one command a line, so that one warm JVM runs
 * every round:
 *
 * <ul>
 *   <li>{@code start APP_ID INPUT PASSED REJECTED}: starts an application
 *       (a new consumer group, APP_ID) from the input's earliest offsets;
 *       answers {@code started APP_ID}.
 *   <li>{@code stop}: closes it; answers {@code stopped}.
 * </ul>
 *
 * An application that fails prints {@code error MESSAGE} and shuts down.
 * At the end of stdin it closes what runs and exits.
 */
public final class StreamsReference {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final byte[] PASSED = "passed".getBytes(StandardCharsets.UTF_8);
  private static final byte[] REJECTED = "rejected".getBytes(StandardCharsets.UTF_8);
  private static final byte[] BAD = "bad".getBytes(StandardCharsets.UTF_8);

  private StreamsReference() {}

  /** Decides each record: parses its value and adds the decision header. */
  static final class Decide implements FixedKeyProcessor<byte[], byte[], byte[]> {
    private FixedKeyProcessorContext<byte[], byte[]> context;

    @Override
    public void init(FixedKeyProcessorContext<byte[], byte[]> context) {
      this.context = context;
    }

    @Override
    public void process(FixedKeyRecord<byte[], byte[]> record) {
      byte[] decision;
      try {
        JsonNode event = MAPPER.readTree(record.value());
        if (event == null || !event.isObject()) {
          decision = BAD;
        } else {
          decision = event.path("score").asDouble() >= 0.5 ? PASSED : REJECTED;
        }
      } catch (IOException e) {
        decision = BAD;
      }
      record.headers().add("decision", decision);
      context.forward(record);
    }
  }

  static KafkaStreams build(String[] args, String appId, String input, String passed, String rejected) {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .processValues(Decide::new)
        .to(
            (key, value, ctx) -> {
              Header h = ctx.headers().lastHeader("decision");
              return h != null && Arrays.equals(h.value(), PASSED) ? passed : rejected;
            },
            Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[1]));
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[2]);
    p.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    return new KafkaStreams(builder.build(), p);
  }

  private static synchronized void say(String line) {
    System.out.println(line.replace('\n', ' '));
    System.out.flush();
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 4) {
      System.err.println("usage: StreamsReference BOOTSTRAP THREADS GUARANTEE STATE_DIR");
      System.exit(2);
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    KafkaStreams running = null;
    String line;
    while ((line = in.readLine()) != null) {
      String[] cmd = line.trim().split("\\s+");
      if (cmd[0].equals("start") && cmd.length == 5 && running == null) {
        KafkaStreams s = build(args, cmd[1], cmd[2], cmd[3], cmd[4]);
        s.setUncaughtExceptionHandler(
            e -> {
              say("error " + e);
              return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
        s.start();
        running = s;
        say("started " + cmd[1]);
      } else if (cmd[0].equals("stop")) {
        if (running != null) {
          running.close(Duration.ofSeconds(60));
          running = null;
        }
        say("stopped");
      } else {
        say("error unknown or untimely command: " + line);
      }
    }
    if (running != null) {
      running.close(Duration.ofSeconds(60));
    }
  }
}
