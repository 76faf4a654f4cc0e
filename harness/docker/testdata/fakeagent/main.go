// Command fakeagent stands in for chaosrun in the docker runtime's tests. It
// takes "agent ROLE --state DIR [--addr HOST:PORT] ..." like chaosrun and
// appends a line to DIR/starts on every start. A serving role prints its URL
// first, answers /id with a token unique to this start, and exits 0 on
// SIGTERM. The client role fetches http://PEER/id into DIR/peer when --peer
// is given, copies DIR/agent.json (its configuration) to DIR/config-seen
// when there is one, then exits with --exit after --sleep; it prints "fake
// client running" once its start is recorded.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "usage: fakeagent agent ROLE --state DIR ...")
		os.Exit(2)
	}
	os.Exit(run(os.Args[2], os.Args[3:]))
}

func run(role string, args []string) int {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	addr := fs.String("addr", "", "listen address")
	state := fs.String("state", "", "state folder")
	exit := fs.Int("exit", 0, "client exit code")
	sleep := fs.Duration("sleep", 0, "client run time")
	peer := fs.String("peer", "", "host:port whose /id the client fetches")
	printed := fs.String("print", "", "print this instead of the URL")
	if err := fs.Parse(args); err != nil {
		return 9
	}
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	id := hex.EncodeToString(token)
	fmt.Fprintf(os.Stderr, "fake %s starting %s\n", role, id)
	f, err := os.OpenFile(filepath.Join(*state, "starts"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 8
	}
	fmt.Fprintln(f, id)
	f.Close()
	if role == "client" {
		return client(*state, *peer, *sleep, *exit)
	}
	return serve(*addr, *printed, id)
}

func client(state, peer string, sleep time.Duration, exit int) int {
	fmt.Fprintln(os.Stderr, "fake client running") // its start is recorded
	if config, err := os.ReadFile(filepath.Join(state, "agent.json")); err == nil {
		if err := os.WriteFile(filepath.Join(state, "config-seen"), config, 0o644); err != nil {
			return 5
		}
	}
	if peer != "" {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + peer + "/id")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 7
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := os.WriteFile(filepath.Join(state, "peer"), body, 0o644); err != nil {
			return 6
		}
	}
	time.Sleep(sleep)
	return exit
}

func serve(addr, printed, id string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	if printed == "" {
		printed = "http://" + ln.Addr().String()
	}
	fmt.Println(printed)
	fmt.Println("serving")
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, id)
	}))
	<-term
	fmt.Fprintln(os.Stderr, "fake agent stopping")
	return 0
}
