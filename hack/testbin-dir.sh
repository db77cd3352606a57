# Sourced by hack scripts and the Makefile: where the sandbox's binaries live.
# One folder per version set, shared by every clone of the repository (and by
# CI on the same machine), rebuilt from scratch on a new machine.
KUBE_VERSION=1.35.4
ETCD_VERSION=3.6.16
# helm is kept in the same folder; hack/tools/helm/go.mod pins it too.
HELM_VERSION=3.22.0
# -pN is the patch level of mongotestd's FerretDB (hack/tools/mongotestd/
# ferretdb-*.patch): bump it, here and in sandbox/proc.go, whenever the patches
# or mongotestd change, so that every machine rebuilds mongotestd.
FERRETDB_VERSION=1.24.2-p6
# ReplayWeb.page, whose prebuilt ui.js and sw.js the replay tests serve, in
# the folder's replaywebpage-<version>/ (sandbox.RWPVersion has the same value).
RWP_VERSION=2.5.3
: "${TRAWLER_TESTBIN:=${XDG_CACHE_HOME:-$HOME/.cache}/trawler/testbin/k8s-v${KUBE_VERSION}-etcd-v${ETCD_VERSION}-ferretdb-v${FERRETDB_VERSION}}"
export TRAWLER_TESTBIN
