// A pilotta-arena bot in C++: uniformly random legal actions, over gRPC with Debian's gRPC C++ packages.
//
//   build/pilotta-cpp-bot --port 50063 [--host 127.0.0.1] [--seed 1]
//   build/pilotta-cpp-bot --socket /run/bot/bot.sock        (a Unix socket: how the arena's sandbox runs it)
//
// It serves the Bot service of proto/pilotta/arena/v1/bot.proto in both protocol versions (1: a unary
// Decide call per decision; 2: one Play stream per seat, chosen when the referee offers it, unless
// PILOTTA_BOT_PROTOCOL=1) and the standard gRPC health service. Every decision request carries the seat's
// legal actions; the bot answers one of them, drawn from its own generator (--seed makes it repeat).
// SIGTERM or SIGINT: it stops taking calls, finishes those in flight (at most 2 s) and exits 0.

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "pilotta/arena/v1/bot.grpc.pb.h"

namespace pb = pilotta::arena::v1;

namespace {

const char* const kName = "cpp-random";
const char* const kVersion = "1.0.0";
const char* const kAuthor = "pilotta-arena";
const char* const kRulesets[] = {"pilotta", "bulgarian", "coinche", "french", "bela"};

struct Options {
  std::string address;  // "127.0.0.1:N" or "unix:PATH"
  std::random_device::result_type seed = std::random_device{}();
};

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << why << "\nusage: pilotta-cpp-bot (--port N [--host H] | --socket PATH) [--seed S]   (or PORT=N)\n";
  std::exit(2);
}

bool Digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

Options ParseArgs(int argc, char** argv) {
  Options o;
  std::string port = std::getenv("PORT") ? std::getenv("PORT") : "";
  std::string host = std::getenv("PILOTTA_BOT_HOST") ? std::getenv("PILOTTA_BOT_HOST") : "127.0.0.1";
  std::string socket;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--port") port = value();
    else if (a == "--host") host = value();
    else if (a == "--socket") socket = value();
    else if (a == "--seed") {
      std::string s = value();
      if (!Digits(s)) Usage("--seed must be a non-negative integer, not " + s);
      o.seed = static_cast<std::random_device::result_type>(std::stoul(s));
    } else Usage("unknown argument " + a);
  }
  if (!socket.empty()) {
    o.address = "unix:" + socket;
  } else {
    if (!Digits(port) || port.size() > 5 || std::stoi(port) == 0 || std::stoi(port) > 65535)
      Usage("give the port to listen on with --port N (or PORT=N), or a Unix socket with --socket PATH");
    o.address = host + ":" + port;
  }
  return o;
}

class RandomBot final : public pb::Bot::Service {
 public:
  explicit RandomBot(std::random_device::result_type seed) : rng_(seed) {}

  grpc::Status Handshake(grpc::ServerContext*, const pb::HandshakeRequest* req, pb::HandshakeReply* reply) override {
    const char* pinned = std::getenv("PILOTTA_BOT_PROTOCOL");
    bool v1_only = pinned != nullptr && std::string(pinned) == "1";
    uint32_t version = 1;
    for (uint32_t v : req->protocol_versions())
      if (v == 2 && !v1_only) version = 2;
    reply->set_name(kName);
    reply->set_version(kVersion);
    reply->set_author(kAuthor);
    reply->set_protocol_version(version);
    for (const char* r : kRulesets) {
      reply->add_rulesets(r);
      reply->add_games(r);  // the deprecated name of the same list, still read by older referees
    }
    return grpc::Status::OK;
  }

  grpc::Status Decide(grpc::ServerContext*, const pb::DecideRequest* req, pb::DecideReply* reply) override {
    std::string why = Choose(*req, reply);
    return why.empty() ? grpc::Status::OK : grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
  }

  grpc::Status MatchStarted(grpc::ServerContext*, const pb::MatchStart*, pb::Ack*) override { return grpc::Status::OK; }
  grpc::Status DealEnded(grpc::ServerContext*, const pb::DealEnd*, pb::Ack*) override { return grpc::Status::OK; }
  grpc::Status MatchEnded(grpc::ServerContext*, const pb::MatchEnd*, pb::Ack*) override { return grpc::Status::OK; }

  // Version 2: answer every decision on the stream, naming it; notices need no answer. The referee closes
  // its side at the end of the seat's match (or leg), and the call ends then.
  grpc::Status Play(grpc::ServerContext*, grpc::ServerReaderWriter<pb::BotMessage, pb::RefereeMessage>* stream) override {
    pb::RefereeMessage message;
    while (stream->Read(&message)) {
      if (message.body_case() != pb::RefereeMessage::kDecide) continue;
      pb::BotMessage answer;
      answer.set_decision_id(message.decision_id());
      std::string why = Choose(message.decide(), answer.mutable_reply());
      if (!why.empty()) {
        answer.clear_reply();
        answer.set_error(why);
      }
      if (!stream->Write(answer)) break;  // the referee cancelled the stream (a timeout): nothing more to say
    }
    return grpc::Status::OK;
  }

 private:
  // Fills ``reply`` with one of the request's legal actions; returns why it could not (empty when it did).
  std::string Choose(const pb::DecideRequest& req, pb::DecideReply* reply) {
    int n = req.legal_actions_size();
    if (n == 0) return "the request lists no legal action";
    std::lock_guard<std::mutex> lock(mu_);  // calls arrive on gRPC's threads; the generator is shared
    int i = std::uniform_int_distribution<int>(0, n - 1)(rng_);
    reply->set_action(req.legal_actions(i));
    return "";
  }

  std::mutex mu_;
  std::mt19937 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  Options options = ParseArgs(argc, argv);
  // SIGTERM and SIGINT are taken by one thread (sigwait) rather than a handler: Shutdown is not
  // async-signal-safe. Blocked here, before gRPC starts its threads, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  RandomBot bot(options.seed);
  grpc::EnableDefaultHealthCheckService(true);  // grpc.health.v1.Health: SERVING for "" while it serves
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, grpc::InsecureServerCredentials());
  builder.RegisterService(&bot);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "pilotta-cpp-bot: cannot listen on " << options.address << "\n";
    return 1;
  }
  std::cerr << "pilotta-cpp-bot: serving on " << options.address << "\n";
  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  });
  server->Wait();
  stopper.join();
  return 0;
}
