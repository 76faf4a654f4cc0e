package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Removed counts what a cleanup removed.
type Removed struct {
	Containers int
	Networks   int
	Volumes    int
}

// Clean removes every container (running or not), network and volume
// labelled chaosrun=1, or, when runID is not empty, only those of that run:
// what a runner that crashed or was killed left behind. Images are kept.
// It must not run while another run that it would match is in progress.
func Clean(ctx context.Context, runID string) (Removed, error) {
	provider, err := newProvider(slog.New(slog.DiscardHandler))
	if err != nil {
		return Removed{}, fmt.Errorf("clean: %w", err)
	}
	defer provider.Close()
	filter := labelFilter(LabelManaged, "1")
	if runID != "" {
		filter = filter.Add("label", LabelRun+"="+runID)
	}
	cli := provider.Client()
	removed, err := removeLabelled(ctx, cli, filter, selfContainer(ctx, cli))
	if err != nil {
		return removed, fmt.Errorf("clean: %w", err)
	}
	return removed, nil
}

// labelFilter matches objects whose label key has value; further labels
// added to it must all match too.
func labelFilter(key, value string) client.Filters {
	return make(client.Filters).Add("label", key+"="+value)
}

// removeLabelled removes the containers, then the networks (after
// disconnecting whatever is still attached, such as the runner's own
// container self), then the volumes that filter matches.
func removeLabelled(ctx context.Context, cli client.APIClient, filter client.Filters, self string) (Removed, error) {
	var n Removed
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	errs = append(errs, err)
	for _, c := range cs.Items {
		if c.ID == self {
			continue
		}
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if count(&n.Containers, err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", short(c.ID), err))
		}
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	errs = append(errs, err)
	for _, nw := range nets.Items {
		if err := removeNetwork(ctx, cli, nw.ID); count(&n.Networks, err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", nw.Name, err))
		}
	}
	vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: filter})
	errs = append(errs, err)
	for _, v := range vols.Items {
		_, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		if count(&n.Volumes, err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
		}
	}
	return n, errors.Join(errs...)
}

// count adds one to *n when err is nil and reports whether err is a real
// failure: an object that is already gone is not one.
func count(n *int, err error) bool {
	if err == nil {
		*n++
		return false
	}
	return !cerrdefs.IsNotFound(err)
}

func removeNetwork(ctx context.Context, cli client.APIClient, id string) error {
	res, err := cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
	if err != nil {
		return err
	}
	for cid := range res.Network.Containers {
		_, err := cli.NetworkDisconnect(ctx, id, client.NetworkDisconnectOptions{Container: cid, Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("disconnect %s: %w", short(cid), err)
		}
	}
	_, err = cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
	return err
}

func short(id string) string { return id[:min(12, len(id))] }
