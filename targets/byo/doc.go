// Package byo is the bring-your-own server contract in one place: what a
// server of target command or image is given and what it must do
// (docs/byo-targets.md tells the whole of it), and the supervisor that runs
// a command target as the server agent's child.
//
// A bring-your-own server serves MCP Streamable HTTP on /mcp at the address
// [EnvListenAddr] names. It writes its side effects to the ledger at
// [EnvLedgerURL] (JSON records POSTed to its /records; a charge record is
// the one it must write), stamped on the run's clock: a record's t_us is
// microseconds since the instant [EnvBase] gives in Unix nanoseconds, the
// base of the client histories and the fault windows too. Whatever must
// outlive a restart goes to the folder [EnvStateDir]. [Env] builds this
// environment; the rest of a process's environment is the runner's (a
// command) or the image's own.
//
// The lifecycle is signals. The server is ready once its address accepts
// connections (an image: once its port answers HTTP, because Docker's port
// publishing accepts connections before anything listens behind it); a
// graceful stop is SIGTERM, with SIGKILL after a drain; a crash is SIGKILL,
// a pause SIGSTOP. A restart gets the same address and state folder back.
// A tool keeps running when its client's connection drops: disconnect is
// not cancel.
//
// [Supervisor] runs a command under that contract: it picks the port,
// starts the command with the environment, waits until it listens, and
// forwards the graceful stop to it.
package byo
