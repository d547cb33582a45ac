#!/bin/sh
# Generates the Go code of the node-local API from api/**/*.proto, and the
# VPP binary-API messages (internal/vppapi/vppmsg) from VPP's .api.json.
#
#   scripts/generate.sh          regenerate in place
#   scripts/generate.sh --check  regenerate into a temp dir and fail if the
#                                committed code differs
#
# The generators are installed at pinned versions into ./bin/protoc-gen, so
# the output depends only on these pins and on protoc (apt protobuf-compiler,
# with the well-known protos from libprotobuf-dev; scripts/install-deps.sh
# installs both).
set -eu

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

root=$(cd "$(dirname "$0")/.." && pwd)
gen_bin="$root/bin/protoc-gen"
module=github.com/contivpp/memif-agent

install_generator() { # package version binary
	if [ ! -x "$gen_bin/$3" ] || [ "$(cat "$gen_bin/$3.version" 2>/dev/null)" != "$2" ]; then
		GOBIN="$gen_bin" go install "$1@$2"
		echo "$2" >"$gen_bin/$3.version"
	fi
}

command -v protoc >/dev/null || {
	echo "protoc not found: run scripts/install-deps.sh (apt protobuf-compiler)" >&2
	exit 1
}
[ -e /usr/include/google/protobuf/timestamp.proto ] || {
	echo "google/protobuf/timestamp.proto not found: run scripts/install-deps.sh (apt libprotobuf-dev)" >&2
	exit 1
}
mkdir -p "$gen_bin"
install_generator google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION" protoc-gen-go
install_generator google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" protoc-gen-go-grpc

out="$root"
if [ "${1:-}" = "--check" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

cd "$root"
protos=$(find api -name '*.proto' | sort)
PATH="$gen_bin:$PATH" protoc -I . \
	--go_out="$out" --go_opt=module="$module" \
	--go-grpc_out="$out" --go-grpc_opt=module="$module" \
	$protos

# The VPP messages the agent sends and receives; the client checks each
# one's CRC against the VPP it connects to.
vpp_messages="
	sockclnt_create sockclnt_create_reply control_ping control_ping_reply
	memclnt_keepalive memclnt_keepalive_reply show_version show_version_reply
	cli_inband cli_inband_reply
	memif_socket_filename_add_del_v2 memif_socket_filename_add_del_v2_reply
	memif_socket_filename_dump memif_socket_filename_details
	memif_create_v2 memif_create_v2_reply memif_delete memif_delete_reply
	memif_dump memif_details
	sw_interface_set_flags sw_interface_set_flags_reply
	sw_interface_dump sw_interface_details
	want_interface_events want_interface_events_reply sw_interface_event
	sw_interface_tag_add_del sw_interface_tag_add_del_reply
	hw_interface_set_mtu hw_interface_set_mtu_reply sw_interface_set_mtu sw_interface_set_mtu_reply
	sw_interface_set_rx_mode sw_interface_set_rx_mode_reply
	sw_interface_add_del_address sw_interface_add_del_address_reply
	ip_address_dump ip_address_details
	bridge_domain_add_del_v2 bridge_domain_add_del_v2_reply
	bridge_domain_dump bridge_domain_details
	sw_interface_set_l2_bridge sw_interface_set_l2_bridge_reply
	sw_interface_set_l2_xconnect sw_interface_set_l2_xconnect_reply
	l2_xconnect_dump l2_xconnect_details
	create_loopback create_loopback_reply delete_loopback delete_loopback_reply
	sw_interface_set_mac_address sw_interface_set_mac_address_reply
	sw_interface_set_table sw_interface_set_table_reply
	sw_interface_get_table sw_interface_get_table_reply
	sw_interface_set_unnumbered sw_interface_set_unnumbered_reply
	ip_unnumbered_dump ip_unnumbered_details
	sw_interface_rx_placement_dump sw_interface_rx_placement_details
	ip_table_add_del ip_table_add_del_reply ip_table_dump ip_table_details
	ip_route_add_del_v2 ip_route_add_del_v2_reply ip_route_v2_dump ip_route_v2_details
	af_packet_create_v3 af_packet_create_v3_reply af_packet_delete af_packet_delete_reply
	af_packet_dump af_packet_details
	vxlan_add_del_tunnel_v3 vxlan_add_del_tunnel_v3_reply vxlan_tunnel_v2_dump vxlan_tunnel_v2_details"
vppmsg=internal/vppapi/vppmsg
# The VPP build the .api.json files were copied from (apijson/README.md):
# the client names it when a VPP's CRCs differ, and memif-agent --version
# prints it.
vpp_release=$(cat "$vppmsg/apijson/VPP_RELEASE")
[ -n "$vpp_release" ] || {
	echo "$vppmsg/apijson/VPP_RELEASE is empty: write the VPP build the .api.json files come from (such as v26.10-rc0-374-gb575ec2c56d)" >&2
	exit 1
}
mkdir -p "$out/$vppmsg"
# shellcheck disable=SC2086 # one argument per message
go run ./scripts/vppapigen -api "$vppmsg/apijson" -vpp-release "$vpp_release" -out "$out/$vppmsg/messages.gen.go" $vpp_messages

if [ "${1:-}" = "--check" ]; then
	status=0
	if ! diff -u "$vppmsg/messages.gen.go" "$out/$vppmsg/messages.gen.go"; then
		status=1
	fi
	for proto in $protos; do
		for generated in "${proto%.proto}.pb.go" "${proto%.proto}_grpc.pb.go"; do
			if ! diff -u "$generated" "$out/$generated"; then
				status=1
			fi
		done
	done
	if [ "$status" -ne 0 ]; then
		echo "generated code is stale: run scripts/generate.sh and commit the result" >&2
	fi
	exit "$status"
fi
