package ipam

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
)

// The errors of Pool and IPAM, matched with errors.Is.
var (
	ErrOutsideSubnet = errors.New("address outside the subnet")
	ErrOutsideShare  = errors.New("address outside this node's share of the subnet")
	ErrReserved      = errors.New("address reserved")
	ErrTaken         = errors.New("address already handed out")
	ErrOwnerHolds    = errors.New("owner already holds another address")
	ErrExhausted     = errors.New("no free address left")
	ErrUnknownPool   = errors.New("no address pool")
	ErrInUse         = errors.New("addresses still handed out")
)

// Pool hands out the addresses of one network's share of its subnet.
type Pool struct {
	subnet, share netip.Prefix
	gateway       netip.Addr
	// first and last bound the addresses pods get.
	first, last netip.Addr
	// capacity is how many addresses pods can get, saturated at MaxUint64.
	capacity uint64
	// next is where Allocate looks first.
	next    netip.Addr
	ownerOf map[netip.Addr]string
	addrOf  map[string]netip.Addr
}

// NewPool returns an empty pool handing out share, a prefix within
// subnet; both are written with their host bits zero. The share must
// leave the gateway and one address for pods.
func NewPool(subnet, share netip.Prefix) (*Pool, error) {
	if err := checkPrefixes(subnet, share); err != nil {
		return nil, err
	}
	first, last := GatewayOf(subnet, share), lastAddr(share)
	if subnet.Addr().Is4() && last == lastAddr(subnet) {
		last = last.Prev()
	}
	if !first.IsValid() || !last.IsValid() || first.Compare(last) >= 0 {
		return nil, fmt.Errorf("share %s of subnet %s leaves no room for the gateway and a pod", share, subnet)
	}
	p := &Pool{
		subnet: subnet, share: share,
		gateway: first, first: first.Next(), last: last,
		ownerOf: map[netip.Addr]string{}, addrOf: map[string]netip.Addr{},
	}
	p.capacity = p.count()
	p.next = p.first
	return p, nil
}

// GatewayOf is the gateway address of share, a prefix within subnet: its
// first address, or the next when that is the subnet's own. Each node's
// VPP holds the gateway of its share, and routes to another node's share
// through that node's.
func GatewayOf(subnet, share netip.Prefix) netip.Addr {
	if first := share.Addr(); first != subnet.Addr() {
		return first
	}
	return share.Addr().Next()
}

func checkPrefixes(subnet, share netip.Prefix) error {
	switch {
	case !subnet.IsValid() || subnet != subnet.Masked() || subnet.Addr().Zone() != "" || subnet.Addr().Is4In6():
		return fmt.Errorf("subnet %s: want an IPv4 or IPv6 prefix with its host bits zero", subnet)
	case !share.IsValid() || share != share.Masked():
		return fmt.Errorf("share %s: want a prefix with its host bits zero", share)
	case share.Addr().BitLen() != subnet.Addr().BitLen() || share.Bits() < subnet.Bits() || !subnet.Contains(share.Addr()):
		return fmt.Errorf("share %s is not within subnet %s", share, subnet)
	}
	return nil
}

// count is how many addresses lie from first to last, saturated.
func (p *Pool) count() uint64 {
	hostBits := p.share.Addr().BitLen() - p.share.Bits()
	if hostBits >= 64 {
		return math.MaxUint64
	}
	size := uint64(1) << hostBits
	// The gateway, and the subnet's network and broadcast addresses when
	// they are in the share.
	return size - 1 - boolCount(p.share.Addr() == p.subnet.Addr()) - boolCount(p.last != lastAddr(p.share))
}

func boolCount(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// lastAddr is the last address of prefix.
func lastAddr(prefix netip.Prefix) netip.Addr {
	bytes := prefix.Masked().Addr().AsSlice()
	for bit := prefix.Bits(); bit < len(bytes)*8; bit++ {
		bytes[bit/8] |= 0x80 >> (bit % 8)
	}
	addr, _ := netip.AddrFromSlice(bytes)
	return addr
}

// Subnet is the network's subnet.
func (p *Pool) Subnet() netip.Prefix { return p.subnet }

// Share is the node's share of the subnet.
func (p *Pool) Share() netip.Prefix { return p.share }

// Gateway is the share's first address, which the node's VPP holds.
func (p *Pool) Gateway() netip.Addr { return p.gateway }

// Len is how many addresses are handed out.
func (p *Pool) Len() int { return len(p.addrOf) }

// AddressOf returns the address owner holds.
func (p *Pool) AddressOf(owner string) (netip.Addr, bool) {
	addr, ok := p.addrOf[owner]
	return addr, ok
}

// Allocate hands owner the next free address, or returns the one it holds.
func (p *Pool) Allocate(owner string) (netip.Addr, error) {
	if addr, holds := p.addrOf[owner]; holds {
		return addr, nil
	}
	if uint64(len(p.ownerOf)) >= p.capacity {
		return netip.Addr{}, fmt.Errorf("%w in share %s of subnet %s: all %d addresses are handed out", ErrExhausted, p.share, p.subnet, p.capacity)
	}
	addr := p.next
	for {
		if _, taken := p.ownerOf[addr]; !taken {
			break
		}
		addr = p.after(addr)
	}
	p.take(owner, addr)
	p.next = p.after(addr)
	return addr, nil
}

// after is the address after addr, wrapping from last to first.
func (p *Pool) after(addr netip.Addr) netip.Addr {
	if addr == p.last {
		return p.first
	}
	return addr.Next()
}

// Claim hands owner addr, the address it asked for.
func (p *Pool) Claim(owner string, addr netip.Addr) error {
	if err := p.checkClaimable(addr); err != nil {
		return err
	}
	holder, taken := p.ownerOf[addr]
	held, holds := p.addrOf[owner]
	switch {
	case taken && holder == owner:
		return nil
	case taken:
		return fmt.Errorf("%w: %s in subnet %s", ErrTaken, addr, p.subnet)
	case holds:
		return fmt.Errorf("%w: %s asked for %s but holds %s in subnet %s", ErrOwnerHolds, owner, addr, held, p.subnet)
	}
	p.take(owner, addr)
	return nil
}

// checkClaimable returns why addr cannot be handed out, or nil.
func (p *Pool) checkClaimable(addr netip.Addr) error {
	switch {
	case !p.subnet.Contains(addr):
		return fmt.Errorf("%w: %s is not in %s", ErrOutsideSubnet, addr, p.subnet)
	case !p.share.Contains(addr):
		return fmt.Errorf("%w: %s is not in %s, this node's share of %s", ErrOutsideShare, addr, p.share, p.subnet)
	case addr == p.gateway:
		return fmt.Errorf("%w: %s is the gateway of %s", ErrReserved, addr, p.subnet)
	case addr.Less(p.first) || p.last.Less(addr):
		return fmt.Errorf("%w: %s is the network or broadcast address of %s", ErrReserved, addr, p.subnet)
	}
	return nil
}

func (p *Pool) take(owner string, addr netip.Addr) {
	p.ownerOf[addr] = owner
	p.addrOf[owner] = addr
}

// Release returns the address owner holds to the pool, if it holds one.
func (p *Pool) Release(owner string) (netip.Addr, bool) {
	addr, holds := p.addrOf[owner]
	if holds {
		delete(p.addrOf, owner)
		delete(p.ownerOf, addr)
	}
	return addr, holds
}
