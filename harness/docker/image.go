package docker

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// ImageRepo is the repository of the images BuildImage tags.
const ImageRepo = "chaosrun"

// AgentUser is the numeric uid:gid agents run as in images BuildImage makes.
const AgentUser = "65532:65532"

// StateDir is where an agent's state volume is mounted in its container. An
// image for the runtime must hold this folder, writable by the image's user:
// a new volume takes the ownership of the folder it is mounted on.
const StateDir = "/state"

// dockerfile is the whole image: no base (nothing can be pulled), the
// binary, and an empty state folder owned by the agent user. No "# syntax="
// line, so the classic builder accepts it.
const dockerfile = `FROM scratch
COPY --chown=` + AgentUser + ` state ` + StateDir + `
COPY chaosrun /chaosrun
USER ` + AgentUser + `
ENTRYPOINT ["/chaosrun"]
`

// buildMu serialises builds in this process, so experiments that start
// together build a missing image once and then all reuse it.
var buildMu sync.Mutex

// BuildImage makes sure the daemon has an image of the static linux chaosrun
// binary at path and returns its tag, chaosrun:<first 12 hex digits of the
// binary's sha256>. The image is kept: when the tag already exists the build
// is skipped, so every experiment of a run, and later runs of the same
// binary, reuse it. The build time (or the reuse) is logged to slog.Default.
func BuildImage(ctx context.Context, binary string) (string, error) {
	return buildImage(ctx, binary, slog.Default())
}

func buildImage(ctx context.Context, binary string, log *slog.Logger) (string, error) {
	sum, err := staticBinarySum(binary)
	if err != nil {
		return "", fmt.Errorf("build image: %w", err)
	}
	tag := ImageRepo + ":" + sum[:12]
	buildMu.Lock()
	defer buildMu.Unlock()
	provider, err := newProvider(log)
	if err != nil {
		return "", fmt.Errorf("build image: %w", err)
	}
	defer provider.Close()
	if _, err := provider.Client().ImageInspect(ctx, tag); err == nil {
		log.Info("docker image reused", "tag", tag)
		return tag, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("build image: inspect %s: %w", tag, err)
	}
	start := time.Now()
	if err := build(ctx, provider, binary, sum); err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	log.Info("docker image built", "tag", tag, "took", time.Since(start).Round(time.Millisecond))
	return tag, nil
}

// errDynamic is staticELF's error for an executable that needs a loader.
var errDynamic = errors.New("dynamically linked")

// staticELF checks that path is an ELF executable that needs no dynamic
// loader (a scratch image has none): errDynamic if it does.
func staticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errDynamic
		}
	}
	return nil
}

// staticBinarySum checks that path is a statically linked ELF executable
// (a scratch image has no dynamic loader) and returns its sha256 in hex.
func staticBinarySum(path string) (string, error) {
	switch err := staticELF(path); {
	case errors.Is(err, errDynamic):
		return "", fmt.Errorf("%s is dynamically linked; build it with CGO_ENABLED=0", path)
	case err != nil:
		return "", fmt.Errorf("%s is not a linux executable: %w", path, err)
	}
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	h := sha256.New()
	if _, err := io.Copy(h, in); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func build(ctx context.Context, provider *testcontainers.DockerProvider, binary, sum string) error {
	archive, err := os.CreateTemp("", "chaosrun-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(archive.Name())
	defer archive.Close()
	if err := writeBuildContext(archive, binary); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	if _, err := archive.Seek(0, io.SeekStart); err != nil {
		return err
	}
	req := &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: archive,
		Repo:           ImageRepo,
		Tag:            sum[:12],
		KeepImage:      true,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) {
			o.Labels = map[string]string{LabelImage: "agent", LabelImage + ".sha256": sum}
		},
	}}
	_, err = provider.BuildImage(ctx, req)
	return err
}

// writeBuildContext writes the Dockerfile, the empty state folder and the
// binary as a tar archive, the Dockerfile first.
func writeBuildContext(w io.Writer, binary string) error {
	in, err := os.Open(binary)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	now := time.Now()
	headers := []*tar.Header{
		{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: now, Typeflag: tar.TypeReg},
		{Name: "state/", Mode: 0o755, ModTime: now, Typeflag: tar.TypeDir},
		{Name: "chaosrun", Mode: 0o755, Size: fi.Size(), ModTime: now, Typeflag: tar.TypeReg},
	}
	bodies := []io.Reader{strings.NewReader(dockerfile), nil, in}
	for i, h := range headers {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if bodies[i] == nil {
			continue
		}
		if n, err := io.Copy(tw, bodies[i]); err != nil {
			return err
		} else if n != h.Size {
			return errors.New(h.Name + " changed while it was archived")
		}
	}
	return tw.Close()
}
