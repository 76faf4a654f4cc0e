// Command cri-reset stops and removes every pod sandbox of a CRI runtime, so
// that the runtime tears each pod's network down through its CNI plugins
// (bridge ports, host-local addresses, portmap rules) before it is stopped.
//
//	cri-reset unix:///path/to/containerd.sock
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cri-reset unix:///path/to/runtime.sock")
		os.Exit(2)
	}
	if err := reset(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "cri-reset:", err)
		os.Exit(1)
	}
}

func reset(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var failed int
	for _, sb := range list.Items {
		name := sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "stop %s: %v\n", name, err)
			failed++
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "remove %s: %v\n", name, err)
			failed++
			continue
		}
		fmt.Printf("removed pod sandbox %s\n", name)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d pod sandboxes not removed", failed, len(list.Items))
	}
	return nil
}
