package main

import (
	"io"
	"os"

	"github.com/uplinksim/uplink/internal/outfile"
)

// Output files (reports, exports, profiles, captures, traces, merged
// records) go through package outfile: written beside their name and
// moved into place once complete, through a symbolic link to its target,
// in place on a device or pipe, and never over what is not a regular
// file. Records files are appended one whole line per write
// (openRecordFile).

// writeFileAtomic writes path with write (outfile.WriteFile, replacing a
// regular file there: the user named the path as an output).
func writeFileAtomic(path string, write func(io.Writer) error) error {
	return outfile.WriteFile(path, outfile.Replace, write)
}

// createOutput starts writing path (outfile.Create, replacing a regular
// file there).
func createOutput(path string) (*outfile.File, error) {
	return outfile.Create(path, outfile.Replace)
}

// openRecordFile opens a JSON Lines records file for appending, creating
// it if needed. When its last line lacks its newline (a writer killed
// mid-record), a newline is written first, so the next record starts a
// line of its own instead of being glued onto the partial one. The file
// is locked against a second writer (lockRecords).
func openRecordFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, outfile.Cause(err)
	}
	if err := lockRecords(f); err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, outfile.Cause(err)
	}
	if st.Mode().IsRegular() && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			f.Close()
			return nil, outfile.Cause(err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, outfile.Cause(err)
			}
		}
	}
	return f, nil
}
