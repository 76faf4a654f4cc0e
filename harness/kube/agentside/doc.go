// Package agentside is the part of the kubernetes runtime that runs in the
// cluster, inside the chaosrun binary of the agent image ("chaosrun agent
// keeper", "chaosrun agent signal"), and its client on the runner's side.
//
// The keeper is one pod per experiment that mounts the experiment's state
// folders on the node (a hostPath) and serves them over HTTP, which the
// runner reaches through a port-forward: it makes each agent's folder,
// owned by the agent's user, and writes the agent's configuration into it
// before the agent's first pod starts; it serves a file (CopyOut) or a
// folder as a tar archive (the state handed back to the runner); and it
// removes the experiment's folders at the end. Every path it is given is
// relative to the experiment's folder and must stay inside it.
//
// Signal runs in an agent's container through an exec, in a pod whose
// containers share one process namespace: the pod's infrastructure
// container is process 1 there, so the agent is an ordinary process that
// SIGKILL and SIGSTOP reach (process 1 of a namespace ignores both from
// inside it). It signals every process of the namespace but process 1 and
// itself, and after SIGSTOP returns once all of them are stopped.
package agentside
