package testpmd

// RuntimeDir is the DPDK runtime directory the vswitch's testpmd was given.
func (v *Vswitch) RuntimeDir() string { return v.runtimeDir }

// FilePrefix is the vswitch's DPDK --file-prefix.
func (v *Vswitch) FilePrefix() string { return v.filePrefix }
