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

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// ProgramDir is the working directory of an agent whose bring-your-own
// program is named by a relative path: the program is copied under it, so
// the path resolves inside the container as it did for the runner.
const ProgramDir = "/byo"

// program is how a bring-your-own command's program reaches the agent's
// container: copied, before the container starts, into a labelled volume
// mounted on the folder the program's path names (the root filesystem is
// read-only, and a copy works where a bind mount would not: when the runner
// itself runs in a container).
type program struct {
	host    string // the program on the runner's side
	in      string // where it is in the container
	dir     string // the volume's mount point, in's folder
	workDir string // "" keeps the image's
}

// programOf places spec.Program; nil for an agent that runs none or names
// it bare (then it must be in the agent image's PATH). A program that
// cannot run in the agent image (which holds no libraries and no shell)
// is an error that says so.
func programOf(spec agent.Spec) (*program, error) {
	p := spec.Program
	if p == "" || !strings.Contains(p, "/") {
		return nil, nil
	}
	if err := static(p); err != nil {
		return nil, fmt.Errorf("%s command %s: %w", spec.Role, p, err)
	}
	in, workDir := path.Clean(filepath.ToSlash(p)), ""
	if !path.IsAbs(in) {
		if !filepath.IsLocal(p) {
			return nil, fmt.Errorf("%s command %s: a relative path must stay below the working directory to be placed in the container", spec.Role, p)
		}
		in, workDir = path.Join(ProgramDir, in), ProgramDir
	}
	return &program{host: p, in: in, dir: path.Dir(in), workDir: workDir}, nil
}

// static checks that the file at p is an ELF executable that needs no
// dynamic loader: the agent image is FROM scratch.
func static(p string) error {
	switch err := staticELF(p); {
	case err == nil, errors.Is(err, os.ErrNotExist):
		return err
	case errors.Is(err, errDynamic):
		return errors.New("dynamically linked, and the agent image holds no libraries: build it static (for Go, CGO_ENABLED=0), or use server.target image")
	default:
		return errors.New("not an ELF executable (a script needs an interpreter, and the agent image has none): use a static binary, or server.target image")
	}
}

// copyInto copies the program into the created (not yet started) container
// id: into its volume, which a read-only root allows where a copy to "/"
// (testcontainers' Files) is refused.
func (pr *program) copyInto(ctx context.Context, cli client.APIClient, id string) error {
	f, err := os.Open(pr.host)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path.Base(pr.in), Mode: 0o755, Size: info.Size(), ModTime: info.ModTime(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: pr.dir, Content: &buf}); err != nil {
		return fmt.Errorf("copy %s into the container: %w", pr.host, err)
	}
	return nil
}

// mount is the labelled volume holding the program.
func (pr *program) mount(volume string, labels map[string]string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: volume, Target: pr.dir,
		VolumeOptions: &mount.VolumeOptions{Labels: labels}}
}
