//go:build tools

// Package tools names what scripts/kube-apiserver.sh builds from this module: kube-apiserver and kubectl of
// k8s.io/kubernetes, whose ./staging modules the replace lines of go.mod take from the Go module proxy at the same
// release.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
