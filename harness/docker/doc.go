// Package docker is the container runtime: every agent of an experiment runs
// in its own container, started from one image that holds nothing but the
// static chaosrun binary, on a private network where agents reach each other
// by network alias (the role name). A crash is a container killed with
// SIGKILL, a graceful restart a docker stop and start, a pause a cgroup
// freeze; an agent's state lives in a named volume, so it outlives restarts.
//
// The runtime works through testcontainers-go with its Ryuk reaper disabled
// (no registry is needed): every container, network and volume it creates
// carries the label chaosrun=1 and the run's label, Close removes all of them
// (also when the context given to New is cancelled), and Clean removes what a
// crashed run left behind.
//
// A server agent whose arguments ask for "--target image --image REF" (a
// bring-your-own server, docs/byo-targets.md) is replaced by a container
// of REF that gets the same network alias, labels, state volume and faults,
// the contract's environment instead of chaosrun's flags, and a writable
// root filesystem; it is ready once its port answers HTTP (byo.go).
//
// The runner may run on the Docker host, where it reaches agents on
// 127.0.0.1 through published ports, or in a container of the same daemon
// (the docker-compose demo), where it joins each experiment's network and
// reaches agents by container name.
package docker
