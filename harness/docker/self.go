package docker

import (
	"bytes"
	"context"
	"os"
	"regexp"

	"github.com/moby/moby/client"
)

// containerPath matches a Docker container's folder in a mount's root.
var containerPath = regexp.MustCompile(`/containers/([0-9a-f]{64})/`)

// selfContainer returns the id of the running container of this daemon the
// runner itself runs in, or "" when it runs on the Docker host. /.dockerenv
// alone is no proof (some hosts carry one, which is why testcontainers may
// take the default gateway for the Docker host): the id comes from the files
// Docker bind-mounts into every container, and the daemon must confirm it.
func selfContainer(ctx context.Context, cli client.APIClient) string {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, id := range containerIDs(info) {
		res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err == nil && res.Container.State != nil && res.Container.State.Running {
			return res.Container.ID
		}
	}
	return ""
}

// containerIDs returns the container ids found in the roots of the mounts of
// /etc/hostname, /etc/hosts and /etc/resolv.conf in a mountinfo listing
// (proc(5): the root is the fourth field, the mount point the fifth). The
// host's own listing names container folders too, but at other mount points.
func containerIDs(mountinfo []byte) []string {
	var ids []string
	seen := map[string]bool{}
	for line := range bytes.Lines(mountinfo) {
		f := bytes.Fields(line)
		if len(f) < 5 {
			continue
		}
		switch string(f[4]) {
		case "/etc/hostname", "/etc/hosts", "/etc/resolv.conf":
		default:
			continue
		}
		if m := containerPath.FindSubmatch(f[3]); m != nil && !seen[string(m[1])] {
			seen[string(m[1])] = true
			ids = append(ids, string(m[1]))
		}
	}
	return ids
}
