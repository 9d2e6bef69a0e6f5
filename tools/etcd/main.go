// etcd for the tests' API server, built from the Go module proxy (scripts/kube-apiserver.sh).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
