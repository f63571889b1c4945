//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// setChildProcess makes cmd's process the leader of a process group of its
// own, killed by the kernel (SIGKILL) when its parent dies, and makes the
// context's cancellation kill that whole group.
//
// Pdeathsig fires when the OS thread that started the child exits, not
// when the parent process does: runProcess keeps its goroutine locked to
// one thread from Start to Wait, so the Go scheduler cannot retire that
// thread while the child runs.
//
// The group of its own keeps a terminal's Ctrl-C away from the children:
// the parent alone is interrupted, and it ends them.
//
// With isolate, the child also starts in a network namespace of its own
// (and, when uplink is not run as root, a user namespace that maps its
// user to itself, which lets it make one): a namespace with only a
// loopback interface that is down and has no address. go-libp2p lists the
// interfaces of the machine it runs on (manet.InterfaceMultiaddrs, from
// its address manager and its swarm's dial filter), and a cell's hosts
// must see only the virtual network; in the namespace that listing is
// empty, and nothing a cell does can reach a real network.
func setChildProcess(cmd *exec.Cmd, isolate bool) {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if isolate {
		attr.Cloneflags = syscall.CLONE_NEWNET
		if os.Geteuid() != 0 {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return killChildGroup(cmd) }
}

// netIsolation reports whether a child can start in a network namespace
// of its own here, by starting self's version command in one; the error
// says why not.
func netIsolation(self string) error {
	cmd := exec.Command(self, "version")
	setChildProcess(cmd, true)
	cmd.Cancel = nil // no context to cancel
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("a process in a network namespace of its own: %w %s", err, out)
	}
	return nil
}

// killChildGroup kills the process group of cmd's started process: the
// child and anything it started.
func killChildGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return nil // the group is gone already
	}
	return err
}
