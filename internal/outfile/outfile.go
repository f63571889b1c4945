// Package outfile is the one way uplink writes an output file: reports,
// pages, figures, exports, merged records, profiles, captures and traces.
//
// A regular file is written under a temporary name in its folder, synced
// and moved into place only once complete, so a failed or interrupted
// write never leaves a partial file under the real name. What the path
// already is decides the rest, and nothing is ever replaced by something
// of another kind:
//
//   - nothing: the file is created (mode 0644);
//   - a regular file: replaced, keeping its permission bits, when the
//     caller was asked to write that path (Replace); refused with
//     ErrExists otherwise (NoClobber);
//   - a symbolic link: followed, and its final target written as above,
//     so the link stays a link; a link whose target is missing is
//     refused, as cp refuses to write through a dangling link;
//   - a character device or a named pipe (/dev/null, a shell's process
//     substitution): written in place, as cp does, never removed or
//     replaced; so is what a link only the kernel can follow names
//     (/dev/stdout to a pipe or a file);
//   - a directory, a socket, a block device or anything else: refused
//     with an error naming what it is.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Mode says what to do with an existing regular file at the path.
type Mode int

const (
	// Replace replaces an existing regular file: for a path the user
	// named as the output (or a generated page) that is written anew.
	Replace Mode = iota
	// NoClobber refuses an existing file with ErrExists.
	NoClobber
)

// ErrExists is returned, wrapped with the path, for an existing file
// under NoClobber.
var ErrExists = errors.New("exists")

// maxLinks bounds the symbolic links followed from one path, as the
// kernel's own limit (ELOOP) does.
const maxLinks = 40

// File is an output file being written. Write to it, then Commit, or
// Discard on failure. It keeps the first write error, so a writer that
// drops errors (the CPU profiler's) cannot hide one: Commit returns it.
type File struct {
	path   string   // as the caller named it, for errors
	target string   // the file written: path with its links followed
	tmp    *os.File // the temporary file of a regular target
	dev    *os.File // a device or pipe written in place
	mode   Mode
	perm   fs.FileMode // the replaced file's permission bits, or 0644
	err    error
}

// Create starts writing path, following what the path is as the package
// comment says; an error names the path and why it cannot be written.
func Create(path string, mode Mode) (*File, error) {
	target, fi, magic, err := resolve(path)
	if err != nil {
		return nil, err
	}
	f := &File{path: path, target: target, mode: mode, perm: 0o644}
	if magic {
		// A link only the kernel can follow (/dev/stdout, /proc/self/fd/N
		// to a pipe or an open file): what it names is written in place,
		// as a shell's redirection would.
		if t := fi.Mode().Type(); t != 0 && t&fs.ModeCharDevice == 0 && t != fs.ModeNamedPipe {
			return nil, fmt.Errorf("cannot write %s: it is %s, not a regular file (not replaced)", path, kind(t))
		}
		dev, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", path, Cause(err))
		}
		f.dev = dev
		return f, nil
	}
	if fi != nil {
		switch t := fi.Mode().Type(); {
		case t == 0: // a regular file
			if mode == NoClobber {
				return nil, fmt.Errorf("%s: %w (not replaced)", path, ErrExists)
			}
			f.perm = fi.Mode().Perm()
		case t&fs.ModeCharDevice != 0 || t == fs.ModeNamedPipe:
			dev, err := os.OpenFile(target, os.O_WRONLY, 0)
			if err != nil {
				return nil, fmt.Errorf("cannot write %s: %w", path, Cause(err))
			}
			f.dev = dev
			return f, nil
		default:
			return nil, fmt.Errorf("cannot write %s: it is %s, not a regular file (not replaced)", path, kind(t))
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", path, Cause(err))
	}
	f.tmp = tmp
	return f, nil
}

// resolve follows path's symbolic links to the file to write, returning
// it with its information, or nil information when it does not exist.
// magic reports a link whose target has no name in the file system but
// that the kernel follows (/proc/self/fd/1 to "pipe:[…]"): fi is then
// what the kernel finds at path.
func resolve(path string) (target string, fi fs.FileInfo, magic bool, err error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if p != path {
				if kfi, kerr := os.Stat(path); kerr == nil {
					return path, kfi, true, nil
				}
				return "", nil, false, fmt.Errorf("cannot write %s: it is a symbolic link to %s, which does not exist (not written through a dangling link)", path, p)
			}
			return p, nil, false, nil
		}
		if err != nil {
			return "", nil, false, fmt.Errorf("cannot create %s: %w", path, Cause(err))
		}
		if fi.Mode().Type() != fs.ModeSymlink {
			return p, fi, false, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, false, fmt.Errorf("cannot write %s: %w", path, Cause(err))
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", nil, false, fmt.Errorf("cannot write %s: more than %d symbolic links in a chain", path, maxLinks)
}

// kind names a file type for an error.
func kind(t fs.FileMode) string {
	switch {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0 && t&fs.ModeCharDevice == 0:
		return "a block device"
	case t&fs.ModeIrregular != 0:
		return "a file of unknown type"
	}
	return fmt.Sprintf("a file of type %v", t)
}

// Write writes to the file; after a first error it returns that error.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	w := f.tmp
	if f.dev != nil {
		w = f.dev
	}
	n, err := w.Write(p)
	if err != nil {
		f.err = err
	}
	return n, err
}

// Name is the path the file is written to, as the caller named it.
func (f *File) Name() string { return f.path }

// Commit finishes the file: a device or pipe is closed; a regular file is
// synced, closed and moved into place (under NoClobber only if nothing
// has appeared there meanwhile). On any error the temporary file is
// removed and the error, naming the path, returned.
func (f *File) Commit() error {
	if f.dev != nil {
		err := f.err
		if cerr := f.dev.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.path, Cause(err))
		}
		return nil
	}
	err := f.err
	if err == nil {
		err = f.tmp.Chmod(f.perm) // CreateTemp makes 0600
	}
	if err == nil {
		err = f.tmp.Sync()
	}
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.install()
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		if errors.Is(err, ErrExists) {
			return err
		}
		return fmt.Errorf("writing %s: %w", f.path, Cause(err))
	}
	return nil
}

// install moves the finished temporary file to the target. Under
// NoClobber a hard link creates the name only if it is still free;
// otherwise the target, checked again, must still be a regular file or
// absent, and is replaced by a rename.
func (f *File) install() error {
	if f.mode == NoClobber {
		if err := os.Link(f.tmp.Name(), f.target); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w (not replaced)", f.path, ErrExists)
			}
			if !linkUnsupported(err) {
				return err
			}
			// A file system without hard links: check, then rename.
			if _, err := os.Lstat(f.target); err == nil {
				return fmt.Errorf("%s: %w (not replaced)", f.path, ErrExists)
			}
			return os.Rename(f.tmp.Name(), f.target)
		}
		return os.Remove(f.tmp.Name())
	}
	if fi, err := os.Lstat(f.target); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("it became %s while being written (not replaced)", kind(fi.Mode().Type()))
	}
	return os.Rename(f.tmp.Name(), f.target)
}

// linkUnsupported reports whether a hard link failed because the file
// system has none (FAT, some network file systems).
func linkUnsupported(err error) bool {
	for _, e := range []error{errors.ErrUnsupported, syscall.EPERM, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.EMLINK} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Discard abandons the file: a temporary file is removed, a device or
// pipe closed.
func (f *File) Discard() {
	if f.dev != nil {
		f.dev.Close()
		return
	}
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}

// WriteFile writes path with write, as Create and Commit do, discarding
// the file when write fails.
func WriteFile(path string, mode Mode, write func(io.Writer) error) error {
	f, err := Create(path, mode)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Discard()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// Install writes dst with the content of src, a finished file (a figure
// a library could only save to a path, written into a private folder),
// as WriteFile does, and removes src once dst is written.
func Install(src, dst string, mode Mode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", dst, Cause(err))
	}
	defer in.Close()
	if err := WriteFile(dst, mode, func(w io.Writer) error { _, err := io.Copy(w, in); return err }); err != nil {
		return err
	}
	in.Close()
	return os.Remove(src)
}

// cause strips the path from a *fs.PathError or *os.LinkError: the
// messages name the file themselves, and a temporary file's name would
// only confuse.
func Cause(err error) error {
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
