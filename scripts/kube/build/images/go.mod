// The pause and smoke programs of the images that scripts/kube/cluster
// imports into its single-node cluster.
module chaosrun.local/kube/images

go 1.26.0
