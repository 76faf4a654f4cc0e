package balancer

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/template"
	"time"

	"github.com/chaosrun/chaosrun/internal/daemon"
)

// Kinds of balancer. Service is not a program this package runs: it is
// the runtime's own (a Kubernetes Service, agent.Balancing), with no
// settings but its balancing method.
const (
	Nginx   = "nginx"
	HAProxy = "haproxy"
	Service = "service"
)

// Balancing methods: every request to the next replica, by the client's
// address, or by the Mcp-Session-Id header (session affinity).
const (
	RoundRobin    = "roundrobin"
	Source        = "source"
	SessionHeader = "header Mcp-Session-Id"
)

// Kinds and Methods are the accepted values.
var (
	Kinds   = []string{Nginx, HAProxy} // the kinds this package runs
	Methods = []string{RoundRobin, Source, SessionHeader}
	// ServiceMethods are a Service's: kube-proxy's own choice per
	// connection, or session affinity by client address (ClientIP).
	ServiceMethods = []string{RoundRobin, Source}
)

// ErrMissing is wrapped when the balancer's binary is not installed.
var ErrMissing = daemon.ErrMissing

// Package is the Debian package holding a kind's binary.
func Package(kind string) string { return kind }

// connectTimeout bounds the balancer's connection to a replica. It is not
// a setting of the experiment: a refused connection fails at once on
// loopback, and a replica that does not accept within it is down.
const connectTimeout = 5 * time.Second

// Config is one balancer. Durations are at run scale (already multiplied
// by the experiment's time scale); a zero duration leaves the directive
// out, so the balancer's own default applies (HAProxy's is no timeout).
type Config struct {
	Kind      string
	Listen    string   // host:port the balancer listens on
	Upstreams []string // host:port of each replica, in replica order
	Balance   string   // one of Methods; "" is RoundRobin
	Dir       string   // the balancer's folder: pid file, logs, temporary files

	// nginx
	ProxyReadTimeout time.Duration
	ProxyBuffering   bool
	KeepaliveTimeout time.Duration

	// HAProxy
	TimeoutServer time.Duration
	TimeoutTunnel time.Duration
	TimeoutClient time.Duration

	_ struct{} // keyed literals only: the config grows
}

// ConnectTimeout is how long the balancer waits for a replica to accept a
// connection (the templates' connect timeout).
func (Config) ConnectTimeout() time.Duration { return connectTimeout }

// FileName is the rendered configuration's name, in Dir and in the
// experiment's results.
func (c Config) FileName() string {
	if c.Kind == HAProxy {
		return "haproxy.cfg"
	}
	return "nginx.conf"
}

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"ms": func(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms" },
	"onoff": func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	},
	"inc": func(i int) int { return i + 1 },
}).ParseFS(templateFS, "templates/*.tmpl"))

// Render writes the balancer's configuration.
func Render(w io.Writer, c Config) error {
	if len(c.Upstreams) == 0 {
		return errors.New("render balancer: no upstream")
	}
	if c.Balance == "" {
		c.Balance = RoundRobin
	}
	var name string
	switch c.Kind {
	case Nginx:
		name = "nginx.conf.tmpl"
	case HAProxy:
		name = "haproxy.cfg.tmpl"
	default:
		return fmt.Errorf("render balancer: unknown kind %q", c.Kind)
	}
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, c); err != nil {
		return fmt.Errorf("render %s: %w", c.Kind, err)
	}
	_, err := w.Write(b.Bytes())
	return err
}
