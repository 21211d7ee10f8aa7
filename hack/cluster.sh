#!/usr/bin/env bash
# A one-node Kubernetes cluster on this host for test/cluster: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy, kubelet and containerd v2
# (hack/kube-peers.sh cluster builds them), Debian's runc and bridge CNI, CoreDNS,
# metrics-server, local-path-provisioner (default StorageClass) and kube-router
# (firewall only, so NetworkPolicy is enforced). Nothing is pulled: every image is
# FROM scratch, built with podman and imported into containerd.
#
# Addresses: pod CIDR 198.18.0.0/16 on bridge orcl0, Services 198.19.0.0/24, DNS
# 198.19.0.10, node IP 198.19.255.1 on a link of its own. Every listener binds the
# node IP (never *, never a loopback port another test may want: the kubelet's
# 10250 included), NodePorts only on the node IP, and pods cannot route anywhere
# outside 198.18.0.0/15.
#
# The host is left as it was found: `up` records sysctls, iptables, ipsets, links,
# mounts and which host paths exist; `down` (also run by `up` when it fails) stops
# every process by its PID, unmounts, and restores all of it.
#
# Usage: hack/cluster.sh up|down|env|images    (CLUSTER_DIR, default /tmp/otelcol-relay-cluster)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
C=${CLUSTER_DIR:-/tmp/otelcol-relay-cluster}
B=$root/bin
P=$C/pki R=$C/run E=$C/etc D=$C/data I=$C/images
NODE=orcl-node NODE_IP=198.19.255.1
POD_CIDR=198.18.0.0/16 SVC_CIDR=198.19.0.0/24 DNS_IP=198.19.0.10 API_SVC_IP=198.19.0.1
BRIDGE=orcl0
# The node IP has a link of its own (an empty bridge: this kernel has no dummy
# links): bridge CNI refuses a bridge that carries another IPv4 address.
NODE_LINK=orclnode0
SYSCTLS="net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max
net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait"
# Paths the components create outside CLUSTER_DIR whatever they are told.
HOST_PATHS="/var/log/pods /var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd"
KUBECTL="$B/kubectl --kubeconfig=$P/admin.kubeconfig"
CTR="$B/ctr --address $D/containerd/containerd.sock -n k8s.io"
PODMAN="podman --root $C/podman/root --runroot $C/podman/run --storage-driver vfs --runtime runc"

t0=$(date +%s.%N)
ts() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$*"; }
start() {
	local n=$1
	shift
	"$@" >"$R/$n.log" 2>&1 &
	echo $! >"$R/$n.pid"
	ts "started $n (pid $!)"
}
waitfor() {
	local what=$1 i
	shift
	for i in $(seq 1 ${WAIT_STEPS:-360}); do
		if "$@" >/dev/null 2>&1; then
			ts "$what ok"
			return 0
		fi
		sleep 0.5
	done
	echo "cluster: timeout waiting for $what" >&2
	return 1
}

# record: the host's state before the first change, once per bring-up.
record() {
	mkdir -p "$R"
	[ -f "$R/host.recorded" ] && return
	for s in $SYSCTLS; do
		v=$(sysctl -n "$s" 2>/dev/null) && printf '%s=%s\n' "$s" "$(echo $v)"
	done >"$R/sysctl.orig"
	iptables-save >"$R/iptables.orig"
	ip6tables-save >"$R/ip6tables.orig"
	{ command -v ipset >/dev/null && ipset list -n || true; } >"$R/ipset.orig"
	ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' >"$R/links.orig"
	awk '{print $2}' /proc/mounts >"$R/mounts.orig"
	for p in $HOST_PATHS; do [ -e "$p" ] && echo "$p"; done >"$R/paths.orig" || true
	touch "$R/host.recorded"
}

down() {
	set +e
	export KUBECONFIG=$P/admin.kubeconfig
	if [ -f "$R/kubelet.pid" ] && kill -0 "$(cat "$R/kubelet.pid")" 2>/dev/null; then
		timeout 60 $KUBECTL delete namespaces -l otelcol-relay-cluster-test=true --wait=false >/dev/null 2>&1
		timeout 60 $KUBECTL delete deployments,statefulsets,daemonsets,pods --all -A --wait=true --timeout=45s >/dev/null 2>&1
	fi
	for n in local-path kube-router kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver; do
		[ -f "$R/$n.pid" ] && kill "$(cat "$R/$n.pid")" 2>/dev/null
	done
	sleep 2
	if [ -S "$D/containerd/containerd.sock" ]; then
		for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s KILL "$t" 2>/dev/null; done
		sleep 1
		for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks delete -f "$t" >/dev/null 2>&1; done
	fi
	for n in containerd etcd; do
		[ -f "$R/$n.pid" ] && kill "$(cat "$R/$n.pid")" 2>/dev/null
	done
	for n in local-path kube-router kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do
		[ -f "$R/$n.pid" ] || continue
		pid=$(cat "$R/$n.pid")
		for i in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$pid" 2>/dev/null
		rm -f "$R/$n.pid"
	done
	# Shims outlive containerd; each one's parent is gone, find them by their socket dir.
	for pid in $(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io -id .* -address $D/containerd/containerd.sock" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null
	done
	# Unmount what the cluster mounted (deepest first), keeping whatever was there before.
	if [ -f "$R/mounts.orig" ]; then
		awk '{print $2}' /proc/mounts | sort -r | while read -r m; do
			case $m in "$C"* | /run/containerd* | /var/lib/kubelet* | /run/netns/cni-*) ;; *) continue ;; esac
			grep -qxF "$m" "$R/mounts.orig" || umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		done
	fi
	if [ -f "$R/links.orig" ]; then
		for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//'); do
			grep -qxF "$l" "$R/links.orig" || ip link del "$l" 2>/dev/null
		done
	fi
	if [ -f "$R/host.recorded" ]; then
		# A table missing from the dump (empty before) would be left as it is by
		# iptables-restore: empty every table first.
		for t in filter nat mangle raw security; do
			iptables -t $t -F 2>/dev/null; iptables -t $t -X 2>/dev/null
			ip6tables -t $t -F 2>/dev/null; ip6tables -t $t -X 2>/dev/null
		done
		iptables-restore <"$R/iptables.orig"
		ip6tables-restore <"$R/ip6tables.orig"
		if command -v ipset >/dev/null; then
			for s in $(ipset list -n); do grep -qxF "$s" "$R/ipset.orig" || ipset destroy "$s" 2>/dev/null; done
		fi
		while read -r kv; do sysctl -qw "$kv" 2>/dev/null; done <"$R/sysctl.orig"
		for p in $HOST_PATHS; do
			grep -qxF "$p" "$R/paths.orig" || rm -rf "$p"
		done
		rm -f "$R/host.recorded"
	fi
	rm -rf "$D" "$C/pv" "$C/local-path"
	ts "down"
}

pki() {
	[ -f "$P/admin.kubeconfig" ] && return
	mkdir -p "$P"
	(
		cd "$P"
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
			-subj "/CN=otelcol-relay-cluster-ca" -keyout ca.key -out ca.crt 2>/dev/null
		cert() { # name subject [san]
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
			if [ -n "${3:-}" ]; then
				printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
			else
				printf 'extendedKeyUsage=clientAuth\n' >"$1.ext"
			fi
			openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
		}
		cert apiserver "/CN=kube-apiserver" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:$API_SVC_IP,IP:$NODE_IP"
		cert admin "/O=system:masters/CN=admin"
		cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
		cert controller-manager "/CN=system:kube-controller-manager"
		cert scheduler "/CN=system:kube-scheduler"
		cert kube-proxy "/CN=system:kube-proxy"
		cert kubelet "/O=system:nodes/CN=system:node:$NODE"
		cert front-proxy-client "/CN=front-proxy-client"
		# The kubelet's serving certificate, signed by the cluster CA, for its node name
		# and IP: the base's kubelet_stats verifies it.
		cert kubelet-serving "/O=system:nodes/CN=system:node:$NODE" "DNS:$NODE,IP:$NODE_IP"
		openssl ecparam -name prime256v1 -genkey -noout -out sa.key
		openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
		for u in admin controller-manager scheduler kube-proxy kubelet; do
			cat >"$u.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: orcl
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: $P/ca.crt}
users:
- name: $u
  user: {client-certificate: $P/$u.crt, client-key: $P/$u.key}
contexts:
- name: orcl
  context: {cluster: orcl, user: $u}
current-context: orcl
KC
		done
	)
}

configs() {
	mkdir -p "$E/cni/net.d" "$E/certs.d" "$C/local-path"
	cat >"$E/containerd.toml" <<EOF
version = 3
root = "$D/containerd/root"
state = "$D/containerd/state"
[grpc]
  address = "$D/containerd/containerd.sock"
[ttrpc]
  address = "$D/containerd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'localhost/otelcol-relay-test/pause:1.0'
    # Registry hosts, one directory each (hosts.toml, its CA): where a test that
    # pulls from a registry of its own says how to reach and trust it.
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '$E/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    netns_mounts_under_state_dir = true
    # No CAP_SYS_RESOURCE here: a negative oom_score_adj (the pause asks -998) fails.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        disable_pause_image_pull = true
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '$(command -v runc)'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '$E/cni/net.d'
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '$NODE_IP'
  [plugins.'io.containerd.internal.v1.opt']
    path = '$D/containerd/opt'
EOF
	# No ipMasq: nothing in the cluster talks to anything outside 198.18.0.0/15.
	cat >"$E/cni/net.d/10-orcl.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "orcl",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.18.0.0/24", "gateway": "198.18.0.1"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$D/cni-ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
	cat >"$E/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 host: kubelet >= 1.35 refuses v1 unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$D/containerd/containerd.sock
address: $NODE_IP
healthzBindAddress: $NODE_IP
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization:
  mode: Webhook
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
failSwapOn: false
podLogsDir: /var/log/pods
serializeImagePulls: false
# Absolute, not a share of a disk of any size: on 252 GiB, 1% is 2.5 GiB the
# tests never need, and every pod was evicted with 4 GiB free.
evictionHard: {memory.available: "100Mi", nodefs.available: "512Mi", imagefs.available: "512Mi", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
	cat >"$E/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $P/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE
bindAddress: $NODE_IP
healthzBindAddress: $NODE_IP:10256
metricsBindAddress: $NODE_IP:10249
# NodePorts only on the node IP: never on a loopback port another test uses.
nodePortAddresses: ["$NODE_IP/32"]
conntrack: {maxPerCore: 0}
EOF
}

# image NAME TAG FILE...: $I/NAME.tar, a FROM scratch image of the given files
# (ENTRYPOINT the first), built with podman into its own store (vfs: no overlay
# mounts on the host, no RUN step: podman cannot run a container here).
image() {
	local name=$1 tag=$2 ctx=$I/$1
	shift 2
	[ -f "$I/$name.tar" ] && return
	rm -rf "$ctx" && mkdir -p "$ctx/rootfs"
	cp -a "$@" "$ctx/rootfs/"
	printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT ["/%s"]\n' "$(basename "$1")" >"$ctx/Containerfile"
	$PODMAN build --quiet --network none -t "localhost/otelcol-relay-test/$name:$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
	$PODMAN save --format docker-archive -o "$I/$name.tar" "localhost/otelcol-relay-test/$name:$tag" >/dev/null
}

# build_images: every image the cluster runs, as archives in $I. The test images
# are rebuilt each time (they are seconds); the add-ons' are kept.
build_images() {
	mkdir -p "$I/bin" "$R"
	rm -f "$I/pause.tar" "$I/clustertool.tar"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$I/bin/" ./test/cluster/images/pause ./test/cluster/images/clustertool)
	image pause 1.0 "$I/bin/pause"
	image clustertool 1.0 "$I/bin/clustertool"
	image coredns 1.0 "$B/coredns"
	[ -x "$B/metrics-server" ] && image metrics-server 1.0 "$B/metrics-server"
	# busybox for local-path-provisioner's helper pods (sh, mkdir, rm): symlinks, no RUN.
	if [ ! -f "$I/busybox.tar" ]; then
		rm -rf "$I/busybox" && mkdir -p "$I/busybox/rootfs/bin"
		cp /bin/busybox "$I/busybox/rootfs/bin/"
		for a in sh mkdir rm ls cat chmod sleep echo seq; do ln -sf busybox "$I/busybox/rootfs/bin/$a"; done
		printf 'FROM scratch\nCOPY rootfs/ /\nENV PATH=/bin\nCMD ["/bin/sh"]\n' >"$I/busybox/Containerfile"
		$PODMAN build --quiet --network none -t localhost/otelcol-relay-test/busybox:1.0 -f "$I/busybox/Containerfile" "$I/busybox" >/dev/null
		$PODMAN save --format docker-archive -o "$I/busybox.tar" localhost/otelcol-relay-test/busybox:1.0 >/dev/null
	fi
	# Debian's Prometheus (hack/test-deps.sh) for the federation test: its binary and
	# the libraries ldd names, at their paths, FROM scratch.
	if [ ! -f "$I/prometheus.tar" ] && command -v prometheus >/dev/null; then
		local prom f
		prom=$(command -v prometheus)
		rm -rf "$I/prometheus" && mkdir -p "$I/prometheus/rootfs"
		for f in "$prom" $(ldd "$prom" | grep -o '/[^ ]*'); do
			mkdir -p "$I/prometheus/rootfs$(dirname "$f")"
			cp -L "$f" "$I/prometheus/rootfs$f"
		done
		printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT ["%s"]\n' "$prom" >"$I/prometheus/Containerfile"
		$PODMAN build --quiet --network none -t localhost/otelcol-relay-test/prometheus:1.0 -f "$I/prometheus/Containerfile" "$I/prometheus" >/dev/null
		$PODMAN save --format docker-archive -o "$I/prometheus.tar" localhost/otelcol-relay-test/prometheus:1.0 >/dev/null
	fi
	relay_image
	# The archives are what the cluster imports: the store's copies (vfs, a full
	# copy per layer) only filled the disk, 18 GiB over a day of runs, until the
	# kubelet's DiskPressure evicted every pod.
	$PODMAN rmi -a -f >/dev/null 2>&1 || true
	ts "images built"
}

# relay_image: what `make image` builds, for the host's architecture only (the same
# binary, SBOM, CA bundle and Dockerfile), under the name `make image` gives it
# (`make print-image`).
relay_image() {
	local name platform sum
	name=$(make -s -C "$root" print-image)
	platform=$(go env GOOS)/$(go env GOARCH)
	make -s -C "$root" cross PLATFORMS="$platform" >/dev/null
	# The archive is reused for the same binary only: an untagged checkout's name
	# (VERSION-dev+commit) stays the same through uncommitted changes.
	sum=$(sha256sum "$root/bin/${platform/\//_}/otelcol-relay" | cut -d' ' -f1)
	if [ -f "$I/relay.tar" ] && [ "$(cat "$R/relay-image" 2>/dev/null)" = "$name" ] &&
		[ "$(cat "$R/relay-image.sha256" 2>/dev/null)" = "$sum" ]; then
		return
	fi
	"$root/hack/ca-bundle.sh" "$root/bin/ca-certificates.crt" >/dev/null
	$PODMAN build --quiet --network none --platform "$platform" -t "$name" \
		--build-arg VERSION="$(make -s -C "$root" print-version)" -f "$root/Dockerfile" "$root" >/dev/null
	rm -f "$I/relay.tar"
	$PODMAN save --format docker-archive -o "$I/relay.tar" "$name" >/dev/null
	echo "$name" >"$R/relay-image"
	echo "$sum" >"$R/relay-image.sha256"
	ts "relay image $name"
}

import_images() {
	for tar in "$I"/*.tar; do $CTR images import "$tar" >/dev/null; done
	ts "images imported"
}

up() {
	for b in etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl containerd containerd-shim-runc-v2 ctr coredns; do
		[ -x "$B/$b" ] || { echo "cluster: $B/$b missing: run hack/kube-peers.sh cluster" >&2; exit 1; }
	done
	# Without these the cluster runs, and the tests that need them say so.
	for b in metrics-server local-path-provisioner kube-router; do
		[ -x "$B/$b" ] || echo "cluster: $B/$b missing (hack/kube-peers.sh cluster): running without it" >&2
	done
	if [ -f "$R/etcd.pid" ] && kill -0 "$(cat "$R/etcd.pid")" 2>/dev/null; then
		# Another run's cluster (a second checkout's make test): not ours to
		# tear down, so a distinct status tells the caller to leave it be.
		echo "cluster: already up (down first)" >&2
		exit 3
	fi
	# A full disk fails every test the same slow way (pods evicted or never
	# admitted, each wait running out): say so at once instead.
	mkdir -p "$C"
	local free
	free=$(df -Pk "$C" | awk 'NR == 2 { print int($4 / 1024) }')
	if ((free < ${CLUSTER_MIN_FREE_MIB:-3072})); then
		echo "cluster: $free MiB free on the filesystem of $C: the cluster needs ${CLUSTER_MIN_FREE_MIB:-3072} (images, volumes, pod logs), and its kubelet evicts every pod below 512" >&2
		exit 1
	fi
	build_images
	record
	# Any failure from here on (set -e exits from inside functions too) tears down.
	trap 'rc=$?; if [ $rc -ne 0 ]; then echo "cluster: up failed ($rc), tearing down" >&2; down; fi' EXIT
	mkdir -p "$R" "$D/etcd" "$D/containerd" "$D/kubelet" "$D/cni-ipam" /var/log/pods /var/log/containers
	pki
	configs
	# The node IP exists before the kubelet starts; CNI creates orcl0 with the
	# pods' gateway later.
	ip link add "$NODE_LINK" type bridge
	ip addr add "$NODE_IP/32" dev "$NODE_LINK"
	ip link set "$NODE_LINK" up
	sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
	# Pods route only inside 198.18.0.0/15 (the bridge and the node): no packet
	# from a pod is forwarded to the host's own networks.
	iptables -N ORCL-EGRESS
	iptables -A ORCL-EGRESS -d 198.18.0.0/15 -j RETURN
	iptables -A ORCL-EGRESS -j DROP
	iptables -I FORWARD 1 -s "$POD_CIDR" -j ORCL-EGRESS

	start etcd "$B/etcd" --name orcl --data-dir "$D/etcd" \
		--listen-client-urls "http://$NODE_IP:2379" --advertise-client-urls "http://$NODE_IP:2379" \
		--listen-peer-urls "http://$NODE_IP:2380" --initial-advertise-peer-urls "http://$NODE_IP:2380" \
		--initial-cluster "orcl=http://$NODE_IP:2380" --listen-metrics-urls "http://$NODE_IP:2381" --log-level warn
	start containerd "$B/containerd" --config "$E/containerd.toml"
	waitfor etcd curl -fsS "http://$NODE_IP:2379/health"
	start kube-apiserver "$B/kube-apiserver" --etcd-servers="http://$NODE_IP:2379" \
		--advertise-address=$NODE_IP --bind-address=$NODE_IP --secure-port=6443 --cert-dir="$D/apiserver-certs" \
		--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
		--service-cluster-ip-range=$SVC_CIDR --allow-privileged=true \
		--kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$P/ca.crt" --kubelet-preferred-address-types=InternalIP \
		--requestheader-client-ca-file="$P/ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$P/front-proxy-client.crt" --proxy-client-key-file="$P/front-proxy-client.key" \
		--enable-aggregator-routing=true --v=0
	waitfor kube-apiserver curl -fsS --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "https://$NODE_IP:6443/readyz"
	start kube-controller-manager "$B/kube-controller-manager" --kubeconfig="$P/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$P/controller-manager.kubeconfig" --authorization-kubeconfig="$P/controller-manager.kubeconfig" \
		--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --use-service-account-credentials=true \
		--cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
		--allocate-node-cidrs=true --cluster-cidr=$POD_CIDR --node-cidr-mask-size=24 --service-cluster-ip-range=$SVC_CIDR \
		--bind-address=$NODE_IP --leader-elect=false --horizontal-pod-autoscaler-sync-period=10s --v=0
	start kube-scheduler "$B/kube-scheduler" --kubeconfig="$P/scheduler.kubeconfig" \
		--authentication-kubeconfig="$P/scheduler.kubeconfig" --authorization-kubeconfig="$P/scheduler.kubeconfig" \
		--bind-address=$NODE_IP --leader-elect=false --v=0
	start kube-proxy "$B/kube-proxy" --config="$E/kube-proxy.yaml" --v=0
	waitfor containerd "$B/ctr" --address "$D/containerd/containerd.sock" version
	import_images
	# cadvisor (in the kubelet) finds containerd only at this path: without it pods
	# have no network stats.
	mkdir -p /run/containerd && ln -sfn "$D/containerd/containerd.sock" /run/containerd/containerd.sock
	start kubelet "$B/kubelet" --config="$E/kubelet.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
		--root-dir="$D/kubelet" --hostname-override=$NODE --node-ip=$NODE_IP --v=1
	export KUBECONFIG=$P/admin.kubeconfig
	waitfor "node Ready" sh -c "$KUBECTL get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
	if [ -x "$B/kube-router" ]; then
		start kube-router "$B/kube-router" --kubeconfig="$P/admin.kubeconfig" --hostname-override=$NODE \
			--run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
			--health-port=0 --metrics-port=0 --v=1
	fi
	sed -e "s#@DNS_IP@#$DNS_IP#g" -e "s#@LOCAL_PATH@#$C/local-path#g" "$root/test/cluster/addons.yaml" | $KUBECTL apply --server-side -f - >/dev/null
	if [ -x "$B/local-path-provisioner" ]; then
		$KUBECTL -n local-path-storage get cm local-path-config -o jsonpath='{.data.helperPod\.yaml}' >"$E/helperPod.yaml"
		$KUBECTL -n local-path-storage get cm local-path-config -o jsonpath='{.data.config\.json}' >"$E/local-path.json"
		start local-path "$B/local-path-provisioner" start --kubeconfig "$P/admin.kubeconfig" \
			--config "$E/local-path.json" --namespace local-path-storage \
			--helper-image localhost/otelcol-relay-test/busybox:1.0 --service-account-name default \
			--helper-pod-file "$E/helperPod.yaml"
	else
		# Static hostPath volumes instead, one per claim the overlays make (no class).
		$KUBECTL delete storageclass local-path >/dev/null
		for i in 0 1 2 3 4; do
			# hostPath gets no fsGroup: the relay (uid 10001) must be able to write.
			mkdir -p "$C/pv/pv$i" && chmod 0777 "$C/pv/pv$i"
			printf 'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: orcl-pv%s}\nspec:\n  capacity: {storage: 8Gi}\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n  hostPath: {path: %s/pv/pv%s, type: DirectoryOrCreate}\n' \
				"$i" "$C" "$i" | $KUBECTL apply --server-side -f - >/dev/null
		done
	fi
	waitfor "default SA" $KUBECTL get sa default -n default
	waitfor "coredns" $KUBECTL -n kube-system wait --for=condition=Available deployment/coredns --timeout=1s
	trap - EXIT
	ts "cluster up"
}

case ${1:-} in
up) up ;;
down) down ;;
images) build_images ;;
env) echo "KUBECONFIG=$P/admin.kubeconfig" ;;
*)
	echo "usage: $0 up|down|env" >&2
	exit 2
	;;
esac
