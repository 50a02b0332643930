// A pilotta-arena bot in Go: uniformly random legal actions, over gRPC with Debian's Go gRPC packages.
//
//	build/pilotta-go-bot --port 50064 [--host 127.0.0.1] [--seed 1]
//	build/pilotta-go-bot --socket /run/bot/bot.sock        (a Unix socket: how the arena's sandbox runs it)
//
// It serves the Bot service of proto/pilotta/arena/v1/bot.proto in both protocol versions (1: a unary
// Decide call per decision; 2: one Play stream per seat, chosen when the referee offers it, unless
// PILOTTA_BOT_PROTOCOL=1) and the standard gRPC health service (SERVING for "" and for the Bot service).
// Every decision request carries the seat's legal actions; the bot answers one of them, drawn from its own
// generator (--seed makes it repeat). SIGTERM or SIGINT: it stops taking calls, finishes those in flight
// (at most 2 s) and exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	pb "github.com/pilotta-arena/pilotta-arena/proto/pilotta/arena/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

const (
	botName    = "go-random"
	botVersion = "1.0.0"
	botAuthor  = "pilotta-arena"
	program    = "pilotta-go-bot"
)

var rulesets = []string{"pilotta", "bulgarian", "coinche", "french", "bela"}

type options struct {
	network, address string // "tcp", "127.0.0.1:N" or "unix", PATH
	seed             int64
}

func usage(why string) {
	fmt.Fprintf(os.Stderr, "%s\nusage: %s (--port N [--host H] | --socket PATH) [--seed S]   (or PORT=N)\n", why, program)
	os.Exit(2)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func parseArgs(args []string) options {
	o := options{seed: time.Now().UnixNano()}
	port, host, socket := os.Getenv("PORT"), os.Getenv("PILOTTA_BOT_HOST"), ""
	if host == "" {
		host = "127.0.0.1"
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() string {
			if i+1 >= len(args) {
				usage(a + " needs a value")
			}
			i++
			return args[i]
		}
		switch a {
		case "--port":
			port = value()
		case "--host":
			host = value()
		case "--socket":
			socket = value()
		case "--seed":
			s := value()
			seed, err := strconv.ParseInt(s, 10, 64)
			if !digits(s) || err != nil {
				usage("--seed must be a non-negative integer, not " + s)
			}
			o.seed = seed
		default:
			usage("unknown argument " + a)
		}
	}
	if socket != "" {
		o.network, o.address = "unix", socket
		return o
	}
	n, err := strconv.Atoi(port)
	if !digits(port) || err != nil || n < 1 || n > 65535 {
		usage("give the port to listen on with --port N (or PORT=N), or a Unix socket with --socket PATH")
	}
	o.network, o.address = "tcp", net.JoinHostPort(host, port)
	return o
}

type randomBot struct {
	pb.UnimplementedBotServer
	mu  sync.Mutex // calls arrive on gRPC's goroutines; the generator is shared
	rng *rand.Rand
}

func (b *randomBot) Handshake(_ context.Context, req *pb.HandshakeRequest) (*pb.HandshakeReply, error) {
	version := uint32(1)
	if os.Getenv("PILOTTA_BOT_PROTOCOL") != "1" {
		for _, v := range req.GetProtocolVersions() {
			if v == 2 {
				version = 2
			}
		}
	}
	// games is the deprecated name of the same list, still read by older referees: fill both.
	return &pb.HandshakeReply{Name: botName, Version: botVersion, Author: botAuthor, ProtocolVersion: version,
		Rulesets: rulesets, Games: rulesets}, nil
}

// choose is one of the request's legal actions, or why there is none to choose.
func (b *randomBot) choose(req *pb.DecideRequest) (string, error) {
	legal := req.GetLegalActions()
	if len(legal) == 0 {
		return "", errors.New("the request lists no legal action")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return legal[b.rng.Intn(len(legal))], nil
}

func (b *randomBot) Decide(_ context.Context, req *pb.DecideRequest) (*pb.DecideReply, error) {
	action, err := b.choose(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.DecideReply{Choice: &pb.DecideReply_Action{Action: action}}, nil
}

func (b *randomBot) MatchStarted(context.Context, *pb.MatchStart) (*pb.Ack, error) {
	return &pb.Ack{}, nil
}
func (b *randomBot) DealEnded(context.Context, *pb.DealEnd) (*pb.Ack, error)   { return &pb.Ack{}, nil }
func (b *randomBot) MatchEnded(context.Context, *pb.MatchEnd) (*pb.Ack, error) { return &pb.Ack{}, nil }

// Play is version 2: answer every decision on the stream, naming it; notices need no answer. The referee
// closes its side at the end of the seat's match (or leg), and the call ends then.
func (b *randomBot) Play(stream pb.Bot_PlayServer) error {
	for {
		message, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // the referee cancelled the stream (a timeout): nothing more to say
		}
		decide := message.GetDecide()
		if decide == nil {
			continue
		}
		answer := &pb.BotMessage{DecisionId: message.GetDecisionId()}
		if action, err := b.choose(decide); err != nil {
			answer.Error = err.Error()
		} else {
			answer.Reply = &pb.DecideReply{Choice: &pb.DecideReply_Action{Action: action}}
		}
		if err := stream.Send(answer); err != nil {
			return err
		}
	}
}

func main() {
	o := parseArgs(os.Args[1:])
	// The sandbox allows 64 processes and threads per instance; Go starts a thread per usable CPU (and
	// more for blocking calls), so on a large worker machine an unbounded GOMAXPROCS could reach the limit.
	// The sandbox gives one core's worth of CPU: two threads of Go code are plenty.
	if os.Getenv("GOMAXPROCS") == "" && runtime.NumCPU() > 2 {
		runtime.GOMAXPROCS(2)
	}
	listener, err := net.Listen(o.network, o.address)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot listen on %s: %v\n", program, o.address, err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	pb.RegisterBotServer(server, &randomBot{rng: rand.New(rand.NewSource(o.seed))})
	healthServer := health.NewServer() // SERVING for "" from the start
	healthServer.SetServingStatus("pilotta.arena.v1.Bot", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, healthServer)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	stopped := make(chan struct{}) // closed once the calls in flight are finished (or cut off)
	go func() {
		defer close(stopped)
		<-stop
		healthServer.Shutdown() // NOT_SERVING while it drains
		drained := make(chan struct{})
		go func() { server.GracefulStop(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(2 * time.Second): // a call still in flight after 2 s is cut off
			server.Stop()
		}
	}()
	prefix := ""
	if o.network == "unix" {
		prefix = "unix:"
	}
	fmt.Fprintf(os.Stderr, "%s: serving on %s%s\n", program, prefix, o.address)
	if err := server.Serve(listener); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
	<-stopped // Serve returns as soon as the listener closes, before GracefulStop has drained the calls
}
