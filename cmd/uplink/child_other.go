//go:build !linux

package main

import (
	"errors"
	"os"
	"os/exec"
)

// setChildProcess makes the context's cancellation kill cmd's process.
// Outside Linux there is no parent-death signal: a child outlives a parent
// killed without a chance to end it.
// Isolation (a network namespace of the child's own) is Linux's; isolate
// is refused earlier by netIsolation.
func setChildProcess(cmd *exec.Cmd, isolate bool) {
	cmd.Cancel = func() error { return killChildGroup(cmd) }
}

// killChildGroup kills cmd's started process.
func killChildGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// netIsolation: network namespaces are Linux's.
func netIsolation(string) error {
	return errors.New("network namespaces are Linux's")
}
