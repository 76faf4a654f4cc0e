// Command inside runs the docker runtime from inside a container, as the
// docker-compose demo's runner does: it starts one fake serving agent,
// fetches its /id through the URL the runtime gives, prints the URL and the
// answer, and closes the runtime. Its exit code is 0 only if all of it worked.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/docker"
)

func main() {
	image := flag.String("image", "", "agent image")
	run := flag.String("run", "", "run id")
	flag.Parse()
	if err := inside(*image, *run); err != nil {
		fmt.Fprintln(os.Stderr, "inside:", err)
		os.Exit(1)
	}
}

func inside(image, run string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := docker.New(ctx, docker.Options{RunID: run, Image: image, ExperimentName: "inside"})
	if err != nil {
		return err
	}
	dir := os.TempDir()
	p, err := rt.Start(ctx, agent.Spec{Role: agent.RoleServer, Serves: true, Port: 8080,
		StateDir: filepath.Join(dir, "state"), LogPath: filepath.Join(dir, "server.log")})
	if err != nil {
		return fmt.Errorf("%w (close: %v)", err, rt.Close())
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.URL() + "/id")
	if err != nil {
		return fmt.Errorf("%w (close: %v)", err, rt.Close())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	fmt.Println(p.URL(), string(body))
	return rt.Close()
}
