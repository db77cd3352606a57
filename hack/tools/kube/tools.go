//go:build tools

// Package tools pins the Kubernetes control-plane commands that the sandbox runs.
// They are built straight from k8s.io/kubernetes/cmd/...; this file only keeps
// their dependencies in go.mod and go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
