// Package kube is the Kubernetes runtime: every experiment gets a namespace
// of its own, every agent runs as a pod of the agent image (the static
// chaosrun binary the docker runtime builds, or one the user names), and a
// serving agent gets a ClusterIP Service, whose address its peers use, so it
// stays the same when the agent's pod is recreated. The runner reaches a
// serving agent through a port-forward on 127.0.0.1, kept on one local port
// across the agent's pods. An agent is ready once it printed its URL (read
// from its pod's log stream, which also becomes the agent's log), and its
// Service lists its pod.
//
// State lives on the node: one folder per agent under a root folder of the
// node (Options.StateRoot), mounted as a hostPath, so a new pod of the agent
// finds what the last one wrote. Every pod of an experiment runs on the node
// its first pod, the keeper, was scheduled on. The keeper ("chaosrun agent
// keeper", package agentside) makes each agent's folder and writes its
// configuration before the agent starts, serves its files while it runs, and
// hands every folder back to the runner at the end before it removes them.
//
// Agent pods share one process namespace: the pod's infrastructure container
// is process 1, so the agent is an ordinary process that a signal sent from
// inside the pod reaches. A crash is SIGKILL sent that way ("chaosrun agent
// signal KILL" through an exec), not a pod deletion, for which the kubelet
// sends SIGTERM first and waits at least two seconds even at grace 0; a pause
// is SIGSTOP and SIGCONT the same way; a graceful stop is a pod deletion with
// a grace of StopGrace. Restarting an agent starts a new pod on the same
// folder.
//
// Everything the runtime creates carries the label chaosrun=1 and the run's
// label; Close (also when the context given to New is cancelled) stops the
// agents, copies their folders into their Spec.StateDir, removes the folders
// from the node and deletes the namespace, waiting until it is gone. Clean
// removes what a runner that was killed left behind.
package kube
