// Package balancer renders and runs the real load balancers an experiment
// puts between the fault proxy and its server replicas: Debian's nginx and
// HAProxy, configured from the experiment's balancer: block.
//
// Render writes the configuration with text/template; Start renders it into
// a folder of the experiment, starts the binary on it in the foreground as
// a child process in its own process group (killed with its parent), and
// returns once the balancer accepts connections on its loopback port. The
// timeouts are the balancer's own: nginx's proxy_read_timeout and HAProxy's
// timeout server close a stream that stays idle, which is what the
// idle_timeout toxic imitates.
//
// nginx runs with master_process off: one process, no workers to orphan
// when it is killed, and no reload or drain: its graceful stop (SIGQUIT)
// exits at once, cutting what it serves. HAProxy's graceful stop (SIGUSR1,
// a soft stop) lets the connections in progress finish.
package balancer
