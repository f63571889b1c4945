//go:build linux

package main

import (
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
func setChildProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Cancel = func() error { return killChildGroup(cmd) }
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
