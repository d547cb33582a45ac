package shares

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
)

// Count is how many shares of length bits subnet holds, saturated at
// math.MaxUint64.
func Count(subnet netip.Prefix, bits int) uint64 {
	split := bits - subnet.Bits()
	if split >= 64 {
		return math.MaxUint64
	}
	return 1 << split
}

// ShareAt returns the share of length bits with index index in subnet:
// the index-th prefix of that length from the subnet's first address.
func ShareAt(subnet netip.Prefix, bits int, index uint64) (netip.Prefix, error) {
	if err := checkSplit(subnet, bits); err != nil {
		return netip.Prefix{}, err
	}
	if count := Count(subnet, bits); index >= count {
		return netip.Prefix{}, fmt.Errorf("share %d of %s in /%d shares: the subnet has %d", index, subnet, bits, count)
	}
	// The address as 128 bits (hi, lo); an IPv4 address sits in lo.
	addr := subnet.Addr()
	hostBits := addr.BitLen() - bits
	b := addr.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	// The subnet's host bits are zero and index < Count: the sum never
	// carries out of the subnet.
	if hostBits >= 64 {
		hi += index << (hostBits - 64)
	} else {
		hi += index >> (64 - hostBits)
		lo += index << hostBits
	}
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], hi)
	binary.BigEndian.PutUint64(out[8:], lo)
	share := netip.AddrFrom16(out)
	if addr.Is4() {
		share = share.Unmap()
	}
	return netip.PrefixFrom(share, bits), nil
}

// checkSplit refuses a share length that does not cut subnet.
func checkSplit(subnet netip.Prefix, bits int) error {
	switch {
	case !subnet.IsValid() || subnet != subnet.Masked():
		return fmt.Errorf("subnet %s: want a prefix with its host bits zero", subnet)
	case bits < subnet.Bits() || bits > subnet.Addr().BitLen():
		return fmt.Errorf("share length /%d: want from /%d (subnet %s) to /%d", bits, subnet.Bits(), subnet, subnet.Addr().BitLen())
	}
	return nil
}
