package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Output files: reports, exports and profiles are written under a
// temporary name in their folder and renamed into place once complete, so
// a failed or interrupted write never leaves a partial file under the real
// name; records files are appended one whole line per write.

// atomicFile is a file being written under a temporary name next to path.
// It records the first write error, so a writer that drops errors (the CPU
// profiler's) cannot hide one: commit returns it.
type atomicFile struct {
	path string
	f    *os.File
	err  error
}

// createAtomic starts writing path under a temporary name in its folder.
func createAtomic(path string) (*atomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", path, pathErrCause(err))
	}
	return &atomicFile{path: path, f: f}, nil
}

func (a *atomicFile) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	n, err := a.f.Write(p)
	if err != nil {
		a.err = err
	}
	return n, err
}

// commit syncs and closes the temporary file and renames it to the real
// path; on any error it removes the temporary file and returns the error.
func (a *atomicFile) commit() error {
	err := a.err
	if err == nil {
		err = a.f.Chmod(0o644) // CreateTemp makes 0600
	}
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("writing %s: %w", a.path, pathErrCause(err))
	}
	return nil
}

// discard closes and removes the temporary file.
func (a *atomicFile) discard() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// writeFileAtomic writes path with write, through a temporary file renamed
// into place on success and removed on failure.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	if err := write(a); err != nil {
		a.discard()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return a.commit()
}

// pathErrCause strips the path from a *fs.PathError or *os.LinkError
// (the messages name the file themselves, and a temporary file's name
// would only confuse).
func pathErrCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// openRecordFile opens a JSON Lines records file for appending, creating
// it if needed. When its last line lacks its newline (a writer killed
// mid-record), a newline is written first, so the next record starts a
// line of its own instead of being glued onto the partial one. The file
// is locked against a second writer (lockRecords).
func openRecordFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, pathErrCause(err)
	}
	if err := lockRecords(f); err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, pathErrCause(err)
	}
	if st.Mode().IsRegular() && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			f.Close()
			return nil, pathErrCause(err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, pathErrCause(err)
			}
		}
	}
	return f, nil
}
