#!/usr/bin/env bash
# Builds the cluster peers the node suites and the demo run, from the
# versions pinned in test/peers/*/go.mod, into a cache keyed by version:
#
#   $PEERS_CACHE/kubernetes-<v>/  kubelet kube-apiserver kube-controller-manager
#                                 kube-scheduler kubectl
#   $PEERS_CACHE/etcd-<v>/        etcd
#   $PEERS_CACHE/containerd-<v>/  containerd containerd-shim-runc-v2 ctr
#   $PEERS_CACHE/helm-<v>/        helm (the chart's lint and render, the
#                                 Helm suite, make demo)
#
# A directory is complete once its .done file exists; complete ones are
# skipped, so a second run costs nothing. runc and the CNI plugins come from
# Debian (scripts/install-deps.sh).
#
#   scripts/peers.sh          build what is missing, then print one line
#                             NAME=DIR per peer (kubernetes, etcd, containerd,
#                             helm)
#   scripts/peers.sh --dir    print the cache dir only
#   scripts/peers.sh NAME...  build only the peers named (for example
#                             containerd, which the unit suites run), then
#                             print their NAME=DIR lines
#
# Environment: PEERS_CACHE (default /var/cache/memif-agent/peers).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PEERS_CACHE:-/var/cache/memif-agent/peers}
if [ "${1:-}" = "--dir" ]; then
	echo "$cache"
	exit 0
fi
export CGO_ENABLED=0 GOFLAGS=-mod=readonly

# version MODULEDIR MODULE prints the version MODULEDIR's go.mod pins.
version() {
	(cd "$root/test/peers/$1" && go list -m -f '{{.Version}}' "$2")
}

# Peers built only when named: containerd17 is for the runs that ask for
# containerd 1.7 (cluster.Containerd17), not for every suite.
on_request=" containerd17 "

# asked NAME says whether NAME is among the peers to build and print.
wanted=("$@")
asked() {
	if [ ${#wanted[@]} -eq 0 ]; then
		[[ $on_request != *" $1 "* ]]
	else
		[[ " ${wanted[*]} " == *" $1 "* ]]
	fi
}

# build NAME VERSION LDFLAGS TAGS PKG... builds every main package PKG into
# $cache/NAME-VERSION unless that directory is complete or NAME is not
# asked for; PKG given as BIN=PKG names the binary BIN.
build() {
	local name=$1 ver=$2 ldflags=$3 tags=$4
	shift 4
	if ! asked "$name"; then
		return
	fi
	local dir="$cache/$name-$ver"
	if [ -e "$dir/.done" ]; then
		echo "peers: $name $ver cached in $dir" >&2
		return
	fi
	echo "peers: building $name $ver into $dir" >&2
	local start=$SECONDS
	mkdir -p "$dir"
	# One go build for all the packages keyed by their own names: their
	# links then run in parallel.
	local pkg named=()
	for pkg in "$@"; do
		if [[ $pkg == *=* ]]; then
			(cd "$root/test/peers/$name" && go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$dir/${pkg%%=*}" "${pkg#*=}")
		else
			named+=("$pkg")
		fi
	done
	if [ ${#named[@]} -gt 0 ]; then
		(cd "$root/test/peers/$name" && go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$dir/" "${named[@]}")
	fi
	touch "$dir/.done"
	echo "peers: built $name $ver in $((SECONDS - start))s" >&2
}

etcd=$(version etcd go.etcd.io/etcd/server/v3)
build etcd "$etcd" "" "" etcd=go.etcd.io/etcd/server/v3

containerd=$(version containerd github.com/containerd/containerd/v2)
build containerd "$containerd" \
	"-X github.com/containerd/containerd/v2/version.Version=$containerd" \
	"no_btrfs no_devmapper no_zfs" \
	github.com/containerd/containerd/v2/cmd/containerd \
	github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
	github.com/containerd/containerd/v2/cmd/ctr

containerd17=$(version containerd17 github.com/containerd/containerd)
build containerd17 "$containerd17" \
	"-X github.com/containerd/containerd/version.Version=$containerd17" \
	"no_btrfs no_devmapper no_zfs" \
	github.com/containerd/containerd/cmd/containerd \
	github.com/containerd/containerd/cmd/containerd-shim-runc-v2 \
	github.com/containerd/containerd/cmd/ctr

kube=$(version kubernetes k8s.io/kubernetes)
minor=${kube#v1.}
minor=${minor%%.*}
kv=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kv+=" -X $p.gitVersion=$kube -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
build kubernetes "$kube" "$kv" "" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubectl \
	k8s.io/kubernetes/cmd/kubelet

helm=$(version helm helm.sh/helm/v3)
build helm "$helm" "-X helm.sh/helm/v3/internal/version.version=$helm -X helm.sh/helm/v3/internal/version.gitTreeState=clean" "" \
	helm.sh/helm/v3/cmd/helm

for line in "kubernetes=$cache/kubernetes-$kube" "etcd=$cache/etcd-$etcd" \
	"containerd=$cache/containerd-$containerd" "containerd17=$cache/containerd17-$containerd17"; do
	if asked "${line%%=*}"; then
		echo "$line"
	fi
done
echo "helm=$cache/helm-$helm"
