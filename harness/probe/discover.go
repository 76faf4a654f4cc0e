package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Choosing the tools of a server the probe knows nothing of: it lists the
// server's tools (tools/list) and picks, for the stream checks, a tool
// with an integer argument that reads as a count of things to stream
// (rows, events, items, count, n), asked for 300 of them; for the effect
// checks the first other tool, its required arguments filled in (strings
// with a per-call value, numbers with 1). The report says what it chose.

// countArgs are argument names taken for "how many things to stream".
var countArgs = []string{"rows", "events", "items", "count", "n", "lines", "records", "chunks", "steps"}

// schema is the part of a tool's input schema the choice reads.
type schema struct {
	Properties map[string]struct {
		Type any `json:"type"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// ChooseTools starts the server command (or reaches the running server)
// alone, lists its tools and fills in s.Stream and s.Effect, saying in
// s.Chosen what it chose and why. It is setup, not a measurement: every
// figure still comes from the battery's runs.
func ChooseTools(ctx context.Context, s *Server) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	endpoint := s.URL
	if endpoint == "" {
		argv, _ := s.Spec["command"].([]string)
		state, err := os.MkdirTemp("", "chaosrun-probe-tools-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(state)
		sup := &byo.Supervisor{Command: argv, Env: byo.Env{ListenAddr: "127.0.0.1:0", StateDir: state}, Drain: 2 * time.Second}
		if err := sup.Start(ctx); err != nil {
			return fmt.Errorf("list the server's tools: %w", err)
		}
		defer sup.Stop()
		endpoint = "http://" + sup.Addr() + "/mcp"
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "chaosrun-probe", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		return fmt.Errorf("list the server's tools: %w", err)
	}
	defer sess.Close()
	res, err := sess.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list the server's tools: %w", err)
	}
	return choose(s, res.Tools)
}

func choose(s *Server, tools []*mcp.Tool) error {
	var names []string
	streamAt := -1
	for i, t := range tools {
		names = append(names, t.Name)
		if streamAt < 0 && countArg(t) != "" {
			streamAt = i
		}
	}
	if streamAt < 0 {
		return fmt.Errorf("%w: none of the server's tools (%s) takes a count of things to stream (%s): name one with --tool and --args",
			ErrInput, strings.Join(names, ", "), strings.Join(countArgs, ", "))
	}
	st := tools[streamAt]
	s.Stream = lab.Call{Tool: st.Name, Args: fill(st), Duration: "1m"}
	s.Stream.Args[countArg(st)] = 300
	s.Effect = s.Stream
	for i, t := range tools {
		if i != streamAt {
			s.Effect = lab.Call{Tool: t.Name, Args: fill(t), Duration: "20s"}
			break
		}
	}
	s.Chosen = fmt.Sprintf("tools chosen from tools/list (%s): %s %v for the stream checks, %s %v for stream close and re-issue",
		strings.Join(names, ", "), s.Stream.Tool, s.Stream.Args, s.Effect.Tool, s.Effect.Args)
	return nil
}

func parse(t *mcp.Tool) schema {
	var sc schema
	b, err := json.Marshal(t.InputSchema)
	if err == nil {
		_ = json.Unmarshal(b, &sc)
	}
	return sc
}

func isType(v any, want string) bool {
	switch x := v.(type) {
	case string:
		return x == want
	case []any:
		return slices.ContainsFunc(x, func(e any) bool { return e == want })
	}
	return false
}

// countArg is the tool's integer argument that reads as a count, or "".
func countArg(t *mcp.Tool) string {
	sc := parse(t)
	for _, name := range countArgs {
		if p, ok := sc.Properties[name]; ok && (isType(p.Type, "integer") || isType(p.Type, "number")) {
			return name
		}
	}
	return ""
}

// fill gives every required argument a value: a string unique per call,
// a number 1, true.
func fill(t *mcp.Tool) map[string]any {
	sc := parse(t)
	args := map[string]any{}
	for _, name := range sc.Required {
		switch p := sc.Properties[name]; {
		case isType(p.Type, "integer"), isType(p.Type, "number"):
			args[name] = 1
		case isType(p.Type, "boolean"):
			args[name] = true
		default:
			args[name] = "probe-{{call}}"
		}
	}
	return args
}
