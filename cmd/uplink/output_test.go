package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// outputTarget is what an output path already is before a command
// writes it, and what must hold afterwards.
type outputTarget struct {
	name string
	// make creates it in dir and returns the path to give the command.
	make func(t *testing.T, dir string) string
	// after checks the path once the command has run; refused: the
	// command must fail, naming why.
	after   func(t *testing.T, path string)
	refused string
}

func outputTargets(t *testing.T) []outputTarget {
	targets := []outputTarget{
		{name: "symlink", make: func(t *testing.T, dir string) string {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "real"), []byte("old"), 0o600))
			p := filepath.Join(dir, "out")
			require.NoError(t, os.Symlink("real", p))
			return p
		}, after: func(t *testing.T, p string) {
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			require.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "the link was replaced")
			b, err := os.ReadFile(filepath.Join(filepath.Dir(p), "real"))
			require.NoError(t, err)
			require.NotEqual(t, "old", string(b), "the link's target was not written")
			require.NotEmpty(t, b)
		}},
		{name: "fifo", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "out")
			require.NoError(t, unix.Mkfifo(p, 0o600))
			// A reader drains the pipe, as a shell's process substitution
			// would, and goes on till the writer closes it.
			go func() {
				f, err := os.Open(p)
				if err == nil {
					io.Copy(io.Discard, f)
					f.Close()
				}
			}()
			return p
		}, after: func(t *testing.T, p string) {
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			require.Equal(t, fs.ModeNamedPipe, fi.Mode().Type(), "the named pipe was replaced")
		}},
		{name: "directory", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "out")
			require.NoError(t, os.Mkdir(p, 0o755))
			return p
		}, refused: "it is a directory, not a regular file (not replaced)", after: func(t *testing.T, p string) {
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			require.True(t, fi.IsDir())
		}},
	}
	if os.Geteuid() == 0 {
		// A copy of /dev/null's node: written in place, never replaced
		// (run as root, a replaced /dev/null breaks the machine).
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat("/dev/null", &st))
		targets = append(targets, outputTarget{name: "device", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "out")
			require.NoError(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(st.Rdev)))
			return p
		}, after: func(t *testing.T, p string) {
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			require.NotZero(t, fi.Mode()&fs.ModeCharDevice, "the device node was replaced by %v", fi.Mode())
		}})
	}
	return targets
}

// TestOutputsKeepWhatThePathIs: every kind of output (an export, a
// record, a profile) writes through a symbolic link, in place into a
// named pipe or a device, and refuses a directory, never replacing what
// the path is, and leaves no temporary file.
func TestOutputsKeepWhatThePathIs(t *testing.T) {
	commands := []struct {
		name string
		args func(path string) []string
	}{
		{"run --export-topology", func(p string) []string {
			return []string{"run", "--nodes", "6", "--degree", "2", "--export-topology", p}
		}},
		{"bulk --out", func(p string) []string { return []string{"bulk", "--duration", "100ms", "--out", p} }},
		{"bulk --cpuprofile", func(p string) []string { return []string{"bulk", "--duration", "100ms", "--cpuprofile", p} }},
	}
	for _, c := range commands {
		for _, tg := range outputTargets(t) {
			t.Run(c.name+"/"+tg.name, func(t *testing.T) {
				dir := t.TempDir()
				p := tg.make(t, dir)
				var out, errb bytes.Buffer
				code := run(c.args(p), &out, &errb)
				if tg.refused != "" {
					require.NotEqual(t, 0, code)
					require.Contains(t, errb.String(), tg.refused)
				} else {
					require.Equal(t, 0, code, errb.String())
				}
				tg.after(t, p)
				requireNoTemp(t, dir)
			})
		}
	}
}
