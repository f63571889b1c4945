//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockRecords takes an exclusive advisory lock on an open records file
// for the life of the descriptor, so that two uplink processes never
// append to one file at once; it fails at once when another holds it.
func lockRecords(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errors.New("another uplink process is writing to it; give each run its own records file (and join them with uplink records merge)")
	}
	return err
}
