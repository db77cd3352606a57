// Package release holds the tests of trawler as an operator deploys it:
// the Helm chart installed, upgraded and uninstalled in an RBAC-enforcing
// sandbox the package's tests share (with a crawl through the release, an
// invite e-mail, and trawler's Kubernetes requests checked against the
// chart's RBAC), values the chart's schema rejects, and the docker compose
// setup on kind checked without a Docker engine. It has no code besides
// its tests.
package release
