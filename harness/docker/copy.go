package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"path"
	"path/filepath"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/internal/untar"
)

// copyConfig puts the agent's configuration in its state volume, in the
// created (not yet started) container id: the root filesystem is
// read-only, and the volume is where the agent reads it and where
// mirrorState finds it again for the results.
func copyConfig(ctx context.Context, cli client.APIClient, id string, config []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: agent.ConfigFile, Mode: 0o644, Size: int64(len(config)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(config); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: StateDir, Content: &buf}); err != nil {
		return fmt.Errorf("copy %s into the container: %w", agent.ConfigFile, err)
	}
	return nil
}

// CopyOut copies the file rel of the agent's state folder to dst. It works
// while the agent runs and after its container has exited.
func (p *process) CopyOut(ctx context.Context, rel, dst string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("copy out %q: not a path inside the state folder", rel)
	}
	res, err := p.rt.cli.CopyFromContainer(ctx, p.ctr.GetContainerID(),
		client.CopyFromContainerOptions{SourcePath: path.Join(StateDir, filepath.ToSlash(rel))})
	if err != nil {
		return fmt.Errorf("copy out %s: %w", rel, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	hdr, err := tr.Next()
	if err != nil {
		return fmt.Errorf("copy out %s: %w", rel, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return fmt.Errorf("copy out %s: not a regular file", rel)
	}
	if err := untar.WriteFile(dst, tr); err != nil {
		return fmt.Errorf("copy out %s: %w", rel, err)
	}
	return nil
}

// mirrorState copies the agent's whole state folder into Spec.StateDir, so
// the runner finds there what the agent wrote, as with the local runtime.
func (p *process) mirrorState(ctx context.Context) error {
	if p.spec.StateDir == "" {
		return nil
	}
	res, err := p.rt.cli.CopyFromContainer(ctx, p.ctr.GetContainerID(),
		client.CopyFromContainerOptions{SourcePath: StateDir})
	if cerrdefs.IsNotFound(err) {
		return nil // removed already: Close after a failed start
	}
	if err != nil {
		return fmt.Errorf("copy state of %s: %w", p.spec.Role, err)
	}
	defer res.Content.Close()
	if err := untar.Extract(tar.NewReader(res.Content), path.Base(StateDir), p.spec.StateDir); err != nil {
		return fmt.Errorf("copy state of %s: %w", p.spec.Role, err)
	}
	return nil
}
