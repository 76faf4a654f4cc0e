package catalog

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// CommandOptions are a server of target command: the program the server
// agent runs under the contract of package targets/byo, and the address
// it listens on when it cannot be told one.
type CommandOptions struct {
	// Command is the program and its arguments; nothing runs through a
	// shell, and arguments may hold byo's placeholders ({addr}, {port}).
	Command []string `yaml:"command" json:"command"`
	// Listen is the fixed loopback host:port the program listens on; ""
	// gives it a free port.
	Listen string `yaml:"listen" json:"listen,omitempty"`
}

// Validate requires a command and a loopback listen address.
func (o *CommandOptions) Validate() error {
	var errs []error
	if len(o.Command) == 0 {
		errs = append(errs, field.Errorf("command", "is required when server.target is command"))
	}
	if o.Listen != "" {
		if msg := loopbackAddr(o.Listen); msg != "" {
			errs = append(errs, field.Errorf("listen", "%s", msg))
		}
	}
	return errors.Join(errs...)
}

// Scaled returns a copy: the options hold no duration.
func (o *CommandOptions) Scaled(float64) targets.Options { c := *o; return &c }

// Program is the program the command runs.
func (o *CommandOptions) Program() (string, string) { return first(o.Command), "command[0]" }

// Needs lists the fixed address, when the options give one.
func (o *CommandOptions) Needs() []targets.Need {
	return []targets.Need{{What: targets.NeedFixedAddress, Field: "listen", Value: o.Listen, Wanted: o.Listen != ""}}
}

// ImageOptions are a server of target image: the container image a
// runtime that runs containers runs in the server agent's place.
type ImageOptions struct {
	Image string `yaml:"image" json:"image"`
}

// Validate requires an image.
func (o *ImageOptions) Validate() error {
	if o.Image == "" {
		return field.Errorf("image", "is required when server.target is image")
	}
	return nil
}

// Scaled returns a copy: the options hold no duration.
func (o *ImageOptions) Scaled(float64) targets.Options { c := *o; return &c }

// ContainerImage is the image to run.
func (o *ImageOptions) ContainerImage() string { return o.Image }

// Needs lists the runtime that runs images.
func (o *ImageOptions) Needs() []targets.Need {
	return []targets.Need{{What: targets.NeedImage, Field: "target", Value: targets.Image, Wanted: true}}
}

// ClientCommandOptions are a client of target command: the program the
// client agent runs once, under the contract of package targets/byo.
type ClientCommandOptions struct {
	Command []string `yaml:"command" json:"command"`
}

// Validate requires a command whose arguments hold no placeholder but
// the client's (the MCP endpoint and its parts, byo.ClientEnv.Expand).
func (o *ClientCommandOptions) Validate() error {
	if len(o.Command) == 0 {
		return field.Errorf("command", "is required when client.target is command")
	}
	var errs []error
	for i, arg := range o.Command {
		for _, ph := range placeholderRE.FindAllString(arg, -1) {
			if !slices.Contains(clientPlaceholders, ph) {
				errs = append(errs, field.Errorf(fmt.Sprintf("command[%d]", i), "unknown placeholder %s (known: %s)", ph, strings.Join(clientPlaceholders, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

var (
	// placeholderRE is what reads as a placeholder in a command's
	// argument: a lower-case word in braces (JSON, with its quotes, does
	// not).
	placeholderRE = regexp.MustCompile(`\{[a-z_]+\}`)
	// clientPlaceholders are those a client command's arguments may hold:
	// the MCP endpoint and its parts.
	clientPlaceholders = []string{byo.PlaceholderURL, byo.PlaceholderAddr, byo.PlaceholderHost, byo.PlaceholderPort}
)

// Scaled returns a copy: the options hold no duration.
func (o *ClientCommandOptions) Scaled(float64) targets.Options { c := *o; return &c }

// Program is the program the command runs.
func (o *ClientCommandOptions) Program() (string, string) { return first(o.Command), "command[0]" }

// The bring-your-own targets: programs of the user's, given no knobs but
// their environment, which answer for themselves whatever the revision.
var (
	CommandServer = targets.Server{
		Name:      targets.Command,
		Options:   func() targets.Options { return &CommandOptions{} },
		Protocols: allRevisions(),
		Refusal:   "a bring-your-own server is given no knobs, only its environment (server.target is {target})",
		Exclusive: "is only used when server.target is " + targets.Command,
	}
	ImageServer = targets.Server{
		Name:      targets.Image,
		Options:   func() targets.Options { return &ImageOptions{} },
		Protocols: allRevisions(),
		Refusal:   "a bring-your-own server is given no knobs, only its environment (server.target is {target})",
		Exclusive: "is only used when server.target is " + targets.Image,
	}
	CommandClient = targets.Client{
		Name:        targets.Command,
		Options:     func() targets.Options { return &ClientCommandOptions{} },
		Refusal:     "a bring-your-own client is given no knobs, only its environment (client.target is {target})",
		Exclusive:   "is only used when client.target is " + targets.Command,
		OneEndpoint: true,
		Records:     byo.ExitFile,
	}
)

func allRevisions() []string { return append(slices.Clone(mcp.Versions), mcp.Version20260728) }

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// loopbackAddr says what is wrong with a fixed listen address, or "".
func loopbackAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("must be host:port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("needs a port between 1 and 65535, got %q", port)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("must be on loopback (127.0.0.1, ::1 or localhost): the runner reaches the server there, got %q", host)
	}
	return ""
}
