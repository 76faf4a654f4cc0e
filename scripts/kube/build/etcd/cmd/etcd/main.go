// Command etcd is etcd's own server, built from the Go module proxy for
// scripts/kube/cluster.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
