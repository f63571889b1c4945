package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// names lists a folder's entries: a write must leave no temporary file.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestNewAndReplaced: a new file is created 0644; a regular file is
// replaced under Replace keeping its permission bits, refused under
// NoClobber with its content untouched; no temporary file stays.
func TestNewAndReplaced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	require.NoError(t, WriteFile(p, NoClobber, writeString("one")))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())

	err = WriteFile(p, NoClobber, writeString("two"))
	require.ErrorIs(t, err, ErrExists)
	require.ErrorContains(t, err, p)
	b, _ := os.ReadFile(p)
	require.Equal(t, "one", string(b))

	require.NoError(t, os.Chmod(p, 0o600))
	require.NoError(t, WriteFile(p, Replace, writeString("three")))
	b, _ = os.ReadFile(p)
	require.Equal(t, "three", string(b))
	fi, _ = os.Stat(p)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, []string{"out.txt"}, names(t, dir))
}

// TestFailedWrite: a write that fails leaves neither the file nor a
// temporary one, and an existing file as it was.
func TestFailedWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	boom := errors.New("boom")
	err := WriteFile(p, Replace, func(w io.Writer) error { io.WriteString(w, "part"); return boom })
	require.ErrorIs(t, err, boom)
	require.Empty(t, names(t, dir))
	require.NoError(t, os.WriteFile(p, []byte("kept"), 0o644))
	require.Error(t, WriteFile(p, Replace, func(io.Writer) error { return boom }))
	b, _ := os.ReadFile(p)
	require.Equal(t, "kept", string(b))
	require.Equal(t, []string{"out.txt"}, names(t, dir))
}

// TestSymlink: a link is written through to its target and stays a link,
// also through a chain and a relative link; NoClobber sees the target; a
// dangling link is refused and nothing is created; a loop is an error.
func TestSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o640))
	link := filepath.Join(dir, "link.txt")
	require.NoError(t, os.Symlink("target.txt", link))
	chain := filepath.Join(dir, "chain.txt")
	require.NoError(t, os.Symlink(link, chain))

	require.NoError(t, WriteFile(chain, Replace, writeString("new")))
	for _, l := range []string{link, chain} {
		fi, err := os.Lstat(l)
		require.NoError(t, err)
		require.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "%s is no longer a link", l)
	}
	b, _ := os.ReadFile(target)
	require.Equal(t, "new", string(b))
	fi, _ := os.Stat(target)
	require.Equal(t, fs.FileMode(0o640), fi.Mode().Perm())
	require.ErrorIs(t, WriteFile(link, NoClobber, writeString("x")), ErrExists)

	dangling := filepath.Join(dir, "dangling.txt")
	require.NoError(t, os.Symlink(filepath.Join(dir, "missing.txt"), dangling))
	err := WriteFile(dangling, Replace, writeString("x"))
	require.ErrorContains(t, err, "does not exist")
	_, err = os.Stat(filepath.Join(dir, "missing.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	fi, _ = os.Lstat(dangling)
	require.Equal(t, fs.ModeSymlink, fi.Mode().Type())

	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.Symlink("loop", loop))
	require.ErrorContains(t, WriteFile(loop, Replace, writeString("x")), "symbolic links in a chain")
}

// TestNamedPipe: a FIFO is written in place (its reader gets the bytes)
// and stays a FIFO, under either mode.
func TestNamedPipe(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(p, 0o600))
	for _, mode := range []Mode{Replace, NoClobber} {
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(p)
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- string(b)
		}()
		require.NoError(t, WriteFile(p, mode, writeString("through the pipe")))
		require.Equal(t, "through the pipe", <-got)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		require.Equal(t, fs.ModeNamedPipe, fi.Mode().Type())
	}
	require.Equal(t, []string{"fifo"}, names(t, dir))
}

// TestCharDevice: a character device node (a copy of /dev/null's, which
// needs root to make) is written in place and stays a device.
func TestCharDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root; TestNamedPipe covers writing in place")
	}
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat("/dev/null", &st))
	dir := t.TempDir()
	p := filepath.Join(dir, "null")
	require.NoError(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(st.Rdev)))
	require.NoError(t, WriteFile(p, Replace, writeString("gone")))
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&fs.ModeCharDevice, "the device node was replaced by %v", fi.Mode())
	require.Equal(t, []string{"null"}, names(t, dir))
}

// TestRefused: a directory and a socket are refused by name, and stay.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.ErrorContains(t, WriteFile(sub, Replace, writeString("x")), "it is a directory, not a regular file")
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	require.ErrorContains(t, WriteFile(sock, Replace, writeString("x")), "it is a socket")
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	require.Equal(t, fs.ModeSocket, fi.Mode().Type())
	require.ElementsMatch(t, []string{"sub", "sock"}, names(t, dir))
}

// TestWriteErrorKept: a write error is kept and returned by Commit, and
// the file is not installed.
func TestWriteErrorKept(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	f, err := Create(p, Replace)
	require.NoError(t, err)
	f.tmp.Close() // the next write fails
	_, werr := f.Write([]byte("x"))
	require.Error(t, werr)
	_, again := f.Write([]byte("y"))
	require.Equal(t, werr, again)
	require.ErrorContains(t, f.Commit(), "writing "+p)
	require.Empty(t, names(t, dir))
}

// TestKernelLink: /proc/self/fd/N of a pipe links to "pipe:[…]", a name
// the file system lacks, which the kernel follows: written in place, as
// /dev/stdout is when the output is piped.
func TestKernelLink(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	p := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
	if _, err := os.Lstat(p); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	require.NoError(t, WriteFile(p, NoClobber, writeString("to the pipe")))
	w.Close()
	require.Equal(t, "to the pipe", <-got)
}
