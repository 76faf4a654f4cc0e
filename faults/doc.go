// Package faults is chaosrun's fault catalogue: the Toxiproxy toxics
// (Toxiproxy's own and ours, from package faults/toxics), process faults
// (restart, crash, pause) and protocol faults (expire or terminate a
// session), their parameters, seeded schedules, and the log of every
// injection on the run's base clock.
//
// The runner hands an injector the handles it needs ([Env]); faults itself
// never starts processes or reads experiment files.
//
// # Kinds
//
// Each kind has a params struct, decoded from an experiment's params:
// mapping (see [NewParams]); durations are written at real-world scale and
// multiplied by the experiment's time_scale in [Plan], and only there.
// Proxy faults act on the one proxy between client and server; `for` is
// how long they stay (absent: until the run ends) and `stream` (upstream:
// client to server; downstream, the default: server to client) which
// direction they act on.
//
//	idle_timeout      {idle, close: fin|reset, for}        [IdleTimeout]
//	reset             {after, for}                         [Reset]
//	latency           {latency, jitter, stream, for}       [Latency]
//	bandwidth         {rate, stream, for}                  [Bandwidth]
//	slicer            {average_size, size_variation, delay, stream, for} [Slicer]
//	limit_data        {bytes, stream, for}                 [LimitData]
//	partition         {for, mode: refuse|blackhole}        [Partition]
//	http_status       {status, count, for}                 [HTTPStatus]
//	restart           {role, graceful}                     [Restart]
//	crash             {role}                               [Crash]
//	pause             {role, for}                          [Pause]
//	expire_session    {}                                   [ExpireSession]
//	terminate_session {}                                   [TerminateSession]
//
// # Schedules and injection
//
// [Plan] expands an experiment's faults (with their repeats and seeded
// jitter) into [Injection]s at run scale, offsets and params alike; [Run]
// applies them on the run's clock, heals them, and writes one [Entry] per
// injection to faults.jsonl, with the params as the experiment wrote them.
//
// # FIN or RST
//
// Toxiproxy decides whether closing a connection sends a FIN or an RST when
// the connection opens (see package faults/toxics). [Run] therefore
// installs what makes closes RSTs at its start when the plan asks for
// resets, and it applies to connections opened from then on; a runner
// starts Run before the workload connects. A Go HTTP client reading an SSE
// body sees io.ErrUnexpectedEOF for a FIN and syscall.ECONNRESET for an RST.
package faults
