#!/usr/bin/env bash
# Builds the sandbox's test binaries from Go modules (kube-apiserver,
# kube-scheduler, kube-controller-manager, etcd, mongotestd, helm, mailpit,
# versitygw) into a per-user cache shared by every clone, fetches
# ReplayWeb.page's prebuilt files from the npm registry, and installs
# redis-server, gcc, chromium and npm if missing.
# Idempotent: only what is absent is built. Prints the binary folder last.
#
# The cold build takes ~20-25 min on 2 cores (kube alone ~8 min, helm ~3.5); later runs take seconds.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/testbin-dir.sh
source "$here/testbin-dir.sh"
mkdir -p "$TRAWLER_TESTBIN"

log() { printf '[setup-testenv] %s\n' "$*" >&2; }

k8s_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=v${KUBE_VERSION} \
 -X k8s.io/component-base/version.gitMajor=${KUBE_VERSION%%.*} \
 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) \
 -X k8s.io/component-base/version.gitTreeState=clean"

build() { # module dir, ldflags, packages...
	local dir=$1 ldflags=$2
	shift 2
	log "building $* (cached in $TRAWLER_TESTBIN)"
	local start=$SECONDS
	(cd "$here/tools/$dir" && CGO_ENABLED=0 go build -ldflags="$ldflags" -o "$TRAWLER_TESTBIN/.tmp-$dir/" "$@")
	mv "$TRAWLER_TESTBIN/.tmp-$dir/"* "$TRAWLER_TESTBIN/"
	rmdir "$TRAWLER_TESTBIN/.tmp-$dir"
	log "built $* in $((SECONDS - start)) s"
}

missing() { for b in "$@"; do [ -x "$TRAWLER_TESTBIN/$b" ] || return 0; done; return 1; }

# mongotestd embeds FerretDB with our patches (hack/tools/mongotestd/README.md):
# the module as the Go module proxy serves it, copied to a build folder,
# patched, and used through a `replace` in a generated copy of go.mod. The
# folder's path is fixed so that rebuilds hit the Go build cache.
build_mongotestd() {
	local tool="$here/tools/mongotestd" work="$TRAWLER_TESTBIN/.build-mongotestd"
	local mod=github.com/FerretDB/FerretDB src p
	(cd "$tool" && go mod download "$mod")
	src=$(cd "$tool" && go list -m -f '{{.Dir}}' "$mod")
	rm -rf "$work"
	mkdir -p "$work"
	cp -R "$src" "$work/ferretdb"
	chmod -R u+w "$work/ferretdb"
	for p in "$tool"/ferretdb-*.patch; do
		[ -e "$p" ] || continue # no patches: FerretDB as served
		log "applying $(basename "$p")"
		patch -s -p1 -d "$work/ferretdb" <"$p"
	done
	cp "$tool/go.mod" "$tool/go.sum" "$work/"
	(cd "$tool" && go mod edit -modfile="$work/go.mod" -replace="$mod=$work/ferretdb")
	build mongotestd "-s -w" -modfile="$work/go.mod" .
	rm -rf "$work"
}

# A new mongotestd patch level renames the folder (FERRETDB_VERSION in
# testbin-dir.sh): take Kubernetes and etcd binaries of the same versions from
# a sibling folder rather than rebuilding them for 20 minutes.
reuse() {
	local b d
	for b in "$@"; do
		[ -x "$TRAWLER_TESTBIN/$b" ] && continue
		for d in "$(dirname "$TRAWLER_TESTBIN")/k8s-v${KUBE_VERSION}-etcd-v${ETCD_VERSION}-ferretdb-v"*; do
			[ "$d" != "$TRAWLER_TESTBIN" ] && [ -x "$d/$b" ] || continue
			log "reusing $b from $d"
			ln -f "$d/$b" "$TRAWLER_TESTBIN/.tmp-$b" 2>/dev/null || cp -p "$d/$b" "$TRAWLER_TESTBIN/.tmp-$b"
			mv "$TRAWLER_TESTBIN/.tmp-$b" "$TRAWLER_TESTBIN/$b"
			break
		done
	done
}
reuse etcd kube-apiserver kube-scheduler kube-controller-manager helm

# Small ones first, so store and Redis work can start while Kubernetes builds.
if missing mongotestd; then build_mongotestd; fi
# The S3 server (Versity S3 Gateway, posix backend): ~2 min.
if missing versitygw; then build versitygw "-s -w" github.com/versity/versitygw/cmd/versitygw; fi
if missing etcd; then build etcd "-s -w" .; fi
# helm installs the chart in the release tests: ~3 min.
if missing helm; then
	build helm "-s -w -X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION} \
 -X helm.sh/helm/v3/internal/version.gitTreeState=clean" helm.sh/helm/v3/cmd/helm
fi
# mailpit is the SMTP server with a web UI that tests and make dev read
# trawler's e-mails from: ~1 min.
if missing mailpit; then build mailpit "-s -w" github.com/axllent/mailpit; fi
if missing kube-apiserver kube-scheduler kube-controller-manager; then
	build kube "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager
fi

# Debian packages the tests need: redis-server, a C compiler for the
# race detector (`go test -race` needs cgo), and Chromium with a font for
# the dashboard's browser tests (e2e/).
missing_pkgs=()
command -v redis-server >/dev/null 2>&1 || missing_pkgs+=(redis-server)
command -v gcc >/dev/null 2>&1 || missing_pkgs+=(gcc libc6-dev)
[ -x /usr/bin/chromium ] || missing_pkgs+=(chromium fonts-liberation)
command -v npm >/dev/null 2>&1 || missing_pkgs+=(npm)
if [ ${#missing_pkgs[@]} -gt 0 ]; then
	log "installing ${missing_pkgs[*]} from Debian packages"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" >/dev/null
fi
ln -sf "$(command -v redis-server)" "$TRAWLER_TESTBIN/redis-server"
if command -v kubectl >/dev/null 2>&1; then ln -sf "$(command -v kubectl)" "$TRAWLER_TESTBIN/kubectl"; fi

# ReplayWeb.page for the replay tests: the prebuilt ui.js and sw.js (and the
# LICENSE) of its npm package, taken from the package's tarball with
# `npm pack`. Not `npm install`: its dependencies (warcio) are not served here,
# and the prebuilt files need none of them.
rwp_dir="$TRAWLER_TESTBIN/replaywebpage-${RWP_VERSION}"
if [ ! -s "$rwp_dir/ui.js" ] || [ ! -s "$rwp_dir/sw.js" ] || [ ! -s "$rwp_dir/LICENSE" ]; then
	log "fetching replaywebpage@${RWP_VERSION} from the npm registry (npm pack)"
	rwp_tmp="$TRAWLER_TESTBIN/.tmp-replaywebpage"
	rm -rf "$rwp_tmp"
	mkdir -p "$rwp_tmp"
	(cd "$rwp_tmp" && npm pack --silent "replaywebpage@${RWP_VERSION}" >/dev/null)
	tar --no-same-owner -xzf "$rwp_tmp/replaywebpage-${RWP_VERSION}.tgz" -C "$rwp_tmp" package/ui.js package/sw.js package/LICENSE
	rm -rf "$rwp_dir"
	mv "$rwp_tmp/package" "$rwp_dir"
	rm -rf "$rwp_tmp"
fi

echo "$TRAWLER_TESTBIN"
