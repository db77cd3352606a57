// Package app is what `trawler serve` runs: the settings table and its
// loading (flags, YAML file, TRAWLER_* variables), the mapping of settings
// to each part's configuration, and Serve, which builds the clients and
// runs the API, the operator and webhook delivery in one process.
//
// It lives outside package main so that `trawler dev` (sandbox/devstack)
// and the end-to-end tests (e2e/) can run trawler in their own process.
package app

// Version is the build's version, logged at start and sent as part of the
// Kubernetes client's user agent; the command sets it from its build-time
// value.
var Version = "dev"
