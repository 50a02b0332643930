// A pilotta-arena bot in Java: uniformly random legal actions, over gRPC with Debian's grpc-java packages.
//
//   java -cp 'build/classes:lib/*' PilottaBot --port 50065 [--host 127.0.0.1] [--seed 1]   (or PORT=N)
//
// It serves the Bot service of proto/pilotta/arena/v1/bot.proto in both protocol versions (1: a unary
// Decide call per decision; 2: one Play stream per seat, chosen when the referee offers it, unless
// PILOTTA_BOT_PROTOCOL=1). In the arena's sandbox it serves a loopback port inside the sandbox's own network
// namespace, and the sandbox relays its Unix socket to it (grpc-java serves Unix sockets only through Netty's
// native epoll transport). It serves the standard gRPC health service too (SERVING for "" and for the Bot
// service), generated from proto/grpc/health/v1/health.proto here: Debian's grpc-java has no grpc-services
// jar. Every decision request carries the seat's legal actions; the bot answers one of
// them, drawn from its own generator (--seed makes it repeat). SIGTERM or SIGINT: it stops taking calls,
// finishes those in flight (at most 2 s) and exits 0.

import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import pilotta.arena.v1.BotGrpc;
import pilotta.arena.v1.BotOuterClass.Ack;
import pilotta.arena.v1.BotOuterClass.BotMessage;
import pilotta.arena.v1.BotOuterClass.DealEnd;
import pilotta.arena.v1.BotOuterClass.DecideReply;
import pilotta.arena.v1.BotOuterClass.DecideRequest;
import pilotta.arena.v1.BotOuterClass.HandshakeReply;
import pilotta.arena.v1.BotOuterClass.HandshakeRequest;
import pilotta.arena.v1.BotOuterClass.MatchEnd;
import pilotta.arena.v1.BotOuterClass.MatchStart;
import pilotta.arena.v1.BotOuterClass.RefereeMessage;
import pilottabot.health.HealthGrpc;
import pilottabot.health.HealthProto.HealthCheckRequest;
import pilottabot.health.HealthProto.HealthCheckResponse;

public final class PilottaBot extends BotGrpc.BotImplBase {
  static final String NAME = "java-random";
  static final String VERSION = "1.0.0";
  static final String AUTHOR = "pilotta-arena";
  static final List<String> RULESETS = List.of("pilotta", "bulgarian", "coinche", "french", "bela");

  private final Random rng;

  PilottaBot(long seed) {
    rng = new Random(seed);
  }

  static void usage(String why) {
    System.err.println(why);
    System.err.println("usage: PilottaBot --port N [--host H] [--seed S]   (or PORT=N)");
    System.exit(2);
  }

  static boolean digits(String s) {
    return s != null && !s.isEmpty() && s.chars().allMatch(c -> c >= '0' && c <= '9');
  }

  // One of the request's legal actions, or null when it lists none. Calls arrive on gRPC's threads, and
  // java.util.Random is thread-safe, but a seeded sequence repeats only when the draws are ordered: hence
  // synchronized.
  private synchronized String choose(DecideRequest request) {
    int n = request.getLegalActionsCount();
    return n == 0 ? null : request.getLegalActions(rng.nextInt(n));
  }

  @Override
  public void handshake(HandshakeRequest request, StreamObserver<HandshakeReply> reply) {
    int version = 1;
    if (!"1".equals(System.getenv("PILOTTA_BOT_PROTOCOL")) && request.getProtocolVersionsList().contains(2)) {
      version = 2;
    }
    // games is the deprecated name of the same list, still read by older referees: fill both.
    reply.onNext(HandshakeReply.newBuilder().setName(NAME).setVersion(VERSION).setAuthor(AUTHOR)
        .setProtocolVersion(version).addAllRulesets(RULESETS).addAllGames(RULESETS).build());
    reply.onCompleted();
  }

  @Override
  public void decide(DecideRequest request, StreamObserver<DecideReply> reply) {
    String action = choose(request);
    if (action == null) {  // an error status with a description, never a made-up code
      reply.onError(Status.INVALID_ARGUMENT.withDescription("the request lists no legal action").asRuntimeException());
      return;
    }
    reply.onNext(DecideReply.newBuilder().setAction(action).build());
    reply.onCompleted();
  }

  @Override
  public void matchStarted(MatchStart request, StreamObserver<Ack> reply) {
    reply.onNext(Ack.getDefaultInstance());
    reply.onCompleted();
  }

  @Override
  public void dealEnded(DealEnd request, StreamObserver<Ack> reply) {
    reply.onNext(Ack.getDefaultInstance());
    reply.onCompleted();
  }

  @Override
  public void matchEnded(MatchEnd request, StreamObserver<Ack> reply) {
    reply.onNext(Ack.getDefaultInstance());
    reply.onCompleted();
  }

  // Version 2: answer every decision on the stream, naming it; notices need no answer. The referee closes
  // its side at the end of the seat's match (or leg), and the bot closes its own then.
  @Override
  public StreamObserver<RefereeMessage> play(StreamObserver<BotMessage> answers) {
    return new StreamObserver<RefereeMessage>() {
      @Override
      public void onNext(RefereeMessage message) {
        if (!message.hasDecide()) {
          return;
        }
        BotMessage.Builder answer = BotMessage.newBuilder().setDecisionId(message.getDecisionId());
        String action = choose(message.getDecide());
        if (action == null) {
          answer.setError("the request lists no legal action");
        } else {
          answer.setReply(DecideReply.newBuilder().setAction(action));
        }
        answers.onNext(answer.build());
      }

      @Override
      public void onError(Throwable t) {}  // the referee cancelled the stream (a timeout): nothing more to say

      @Override
      public void onCompleted() {
        answers.onCompleted();
      }
    };
  }

  // grpc.health.v1.Health: SERVING for the server ("") and for the Bot service while it serves; any other
  // name is NOT_FOUND, as the standard says.
  static final class Health extends HealthGrpc.HealthImplBase {
    volatile boolean serving = true;

    @Override
    public void check(HealthCheckRequest request, StreamObserver<HealthCheckResponse> reply) {
      String service = request.getService();
      if (!service.isEmpty() && !service.equals("pilotta.arena.v1.Bot")) {
        reply.onError(Status.NOT_FOUND.withDescription("unknown service " + service).asRuntimeException());
        return;
      }
      HealthCheckResponse.ServingStatus status = serving
          ? HealthCheckResponse.ServingStatus.SERVING : HealthCheckResponse.ServingStatus.NOT_SERVING;
      reply.onNext(HealthCheckResponse.newBuilder().setStatus(status).build());
      reply.onCompleted();
    }
  }

  public static void main(String[] args) throws Exception {
    String port = System.getenv("PORT");
    String host = System.getenv().getOrDefault("PILOTTA_BOT_HOST", "127.0.0.1");
    long seed = System.nanoTime();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.equals("--port") && !a.equals("--host") && !a.equals("--seed")) {
        usage("unknown argument " + a);
      }
      if (i + 1 >= args.length) {
        usage(a + " needs a value");
      }
      String value = args[++i];
      if (a.equals("--port")) {
        port = value;
      } else if (a.equals("--host")) {
        host = value;
      } else {
        if (!digits(value) || value.length() > 18) {
          usage("--seed must be a non-negative integer, not " + value);
        }
        seed = Long.parseLong(value);
      }
    }
    if (!digits(port) || port.length() > 5 || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535) {
      usage("give the port to listen on with --port N (or PORT=N)");
    }
    InetSocketAddress address = new InetSocketAddress(host, Integer.parseInt(port));
    Health health = new Health();
    Server server =
        NettyServerBuilder.forAddress(address).addService(new PilottaBot(seed)).addService(health).build().start();
    System.err.println("pilotta-java-bot: serving on " + host + ":" + port);
    // SIGTERM runs the shutdown hooks: stop taking calls, let those in flight finish (at most 2 s). A JVM
    // ended by a signal exits 143 (128 + 15) once its hooks are done, whatever main did; the check expects 0
    // for a clean stop, so the hook, the last thing to run, halts with 0 itself.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      health.serving = false;  // NOT_SERVING while it drains
      server.shutdown();
      try {
        if (!server.awaitTermination(2, TimeUnit.SECONDS)) {
          server.shutdownNow();
        }
      } catch (InterruptedException e) {
        server.shutdownNow();
      }
      System.err.flush();
      Runtime.getRuntime().halt(0);
    }));
    server.awaitTermination();
  }
}
