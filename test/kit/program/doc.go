// Package program runs a program a test kit or a demo starts (a peer of a
// cluster, the agent binary) with its output appended to a log file, and
// stops it: SIGTERM, then SIGKILL after a grace period. Running says why a
// program is gone, with the end of its log, so that a waiting step fails
// with the program's own words.
//
// The package owns the goroutine that waits for each program; it ends when
// the program exits. That goroutine also forks the program, locked to its
// OS thread until the exit: a Pdeathsig follows the forking thread, and
// StartAndWait is the one way the kits fork a program that has one. The caller owns the programs and stops them.
//
// Example:
//
//	cmd := exec.Command("etcd", "--data-dir", dir)
//	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
//	p, err := program.Start("etcd", filepath.Join(logDir, "etcd.log"), cmd)
//	if err := p.Running(); err != nil { ... }   // exited: its exit status and log tail
//	killed, err := p.Stop(20 * time.Second)
package program
