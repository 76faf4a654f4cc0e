package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/chaosrun/chaosrun/harness/agent"
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
	if err := writeFile(dst, tr, 0o644); err != nil {
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
	if err := extract(tar.NewReader(res.Content), path.Base(StateDir), p.spec.StateDir); err != nil {
		return fmt.Errorf("copy state of %s: %w", p.spec.Role, err)
	}
	return nil
}

// extract writes the directories and regular files of an archive whose
// entries all lie under top into dir. Other entry types are skipped, and no
// entry may lead outside dir.
func extract(tr *tar.Reader, top, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if name == top {
			continue
		}
		rel, ok := strings.CutPrefix(name, top+"/")
		if !ok || !filepath.IsLocal(rel) {
			return fmt.Errorf("archive entry %q leads outside the state folder", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr, 0o644)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(dst string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
