#!/usr/bin/env bash
# Regenerates everything derived from the types in k8s/apis/:
#   k8s/apis/trawler/v1/zz_generated.deepcopy.go      deepcopy-gen
#   k8s/generated/{clientset/versioned,listers,informers/externalversions}
#                                                      client-gen, lister-gen, informer-gen
#   k8s/crds/*.yaml and deploy/helm/trawler/crds/      controller-gen
# The generators are pinned by the separate module hack/tools/codegen, built
# once per go.sum into a cache folder; the only network they need is the Go
# module proxy, on the first build.
#
# Usage: hack/update-codegen.sh           regenerate in place
#        hack/update-codegen.sh --verify  regenerate into a scratch copy and
#                                         fail if anything differs
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# TRAWLER_ROOT is the tree to generate into; --verify sets it.
root=${TRAWLER_ROOT:-$(cd "$here/.." && pwd)}

if [ "${1:-}" = --verify ]; then
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	# The generators read go.mod and k8s/apis and write under k8s/ and the
	# chart's crds/; copy exactly that much.
	cp "$root/go.mod" "$root/go.sum" "$scratch/"
	cp -r "$root/k8s" "$scratch/k8s"
	mkdir -p "$scratch/deploy/helm/trawler"
	cp -r "$root/deploy/helm/trawler/crds" "$scratch/deploy/helm/trawler/crds" 2>/dev/null || true
	TRAWLER_ROOT=$scratch "$0"
	status=0
	diff -r "$root/k8s" "$scratch/k8s" || status=1
	diff -r "$root/deploy/helm/trawler/crds" "$scratch/deploy/helm/trawler/crds" || status=1
	if [ $status -ne 0 ]; then
		echo "generated files are stale: run hack/update-codegen.sh (make generate)" >&2
		exit 1
	fi
	echo "generated files are up to date" >&2
	exit 0
fi
tools="$here/tools/codegen"
module=github.com/trawlerhq/trawler
apis=k8s/apis/trawler/v1

log() { printf '[update-codegen] %s\n' "$*" >&2; }

# One binary folder per pinned tool set, so a change of go.sum rebuilds.
sum=$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-16)
bin="${XDG_CACHE_HOME:-$HOME/.cache}/trawler/codegen/$sum"
if [ ! -x "$bin/controller-gen" ]; then
	log "building generators into $bin"
	mkdir -p "$bin.tmp"
	(cd "$tools" && CGO_ENABLED=0 go build -o "$bin.tmp/" \
		k8s.io/code-generator/cmd/deepcopy-gen \
		k8s.io/code-generator/cmd/client-gen \
		k8s.io/code-generator/cmd/lister-gen \
		k8s.io/code-generator/cmd/informer-gen \
		sigs.k8s.io/controller-tools/cmd/controller-gen)
	rm -rf "$bin" && mv "$bin.tmp" "$bin"
fi

cd "$root"
# The generated files carry only the generators' own "DO NOT EDIT" line.
header=/dev/null

log "deepcopy"
"$bin/deepcopy-gen" --go-header-file "$header" --output-file zz_generated.deepcopy.go "./$apis"

# Start from empty folders so that a removed type leaves no stale file.
rm -rf k8s/generated k8s/crds
# No apply configurations: without an OpenAPI schema of the types their
# fake NewClientset rejects every CrawlJob, and nothing needs Apply.
log "clientset"
"$bin/client-gen" --go-header-file "$header" \
	--clientset-name versioned --input-base "" --input "$module/$apis" \
	--output-dir k8s/generated/clientset --output-pkg "$module/k8s/generated/clientset"
log "listers"
"$bin/lister-gen" --go-header-file "$header" \
	--output-dir k8s/generated/listers --output-pkg "$module/k8s/generated/listers" "./$apis"
log "informers"
"$bin/informer-gen" --go-header-file "$header" \
	--versioned-clientset-package "$module/k8s/generated/clientset/versioned" \
	--listers-package "$module/k8s/generated/listers" \
	--output-dir k8s/generated/informers --output-pkg "$module/k8s/generated/informers" "./$apis"

log "CRDs"
"$bin/controller-gen" crd paths=./k8s/apis/... output:crd:dir=k8s/crds
# Helm installs the files of a chart's crds/ folder before anything else;
# they are byte-for-byte copies (k8s/crds_test.go checks).
rm -rf deploy/helm/trawler/crds
mkdir -p deploy/helm/trawler/crds
cp k8s/crds/*.yaml deploy/helm/trawler/crds/
