// Command uplink is the simulator's one command line: one subcommand per
// job.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// release is uplink's release; buildVersion adds the commit.
const release = "0.1.0-dev"

// buildVersion is the version recorded with every result: the release and,
// when the binary was built from a git checkout, its commit (with "+dirty"
// for uncommitted changes), or else a hash of the executable, so records
// from different code are told apart.
func buildVersion() string {
	v := release
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		// Built without VCS stamping (-buildvcs=false): fingerprint the
		// executable instead, so different code still reads differently.
		if h, err := executableHash(); err == nil {
			return v + "+bin." + h
		}
		return v
	}
	v += "+" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

const usage = `uplink: a packet-level network simulator that runs real protocol code

Usage:
  uplink <command> [flags]

Commands:
  run       gossipsub cells (the main job); a bare 'uplink run' runs a small default
  validate  replay a reference table of the study's report and compare
  bulk      bulk transfers between two nodes over real quic-go or uplink's TCP
  records   check or merge records files
  slurm     a run or validate sweep as a Slurm job array: plan, submit, status
  summarize print run's table from records files, by variant, comparing the variants
  results   regenerate (or --check) the result pages from their committed records
  version   print the version

Run 'uplink <command> --help' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit status: 0 on success,
// 1 when the job failed, 2 on a usage error, 128 plus the signal's number
// when a signal stopped the sweep (130 for SIGINT, 143 for SIGTERM).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "cell":
		err = cmdCell(args[1:], os.Stdin, stdout, stderr)
	case "bulk":
		err = cmdBulk(args[1:], stdout, stderr)
	case "validate":
		err = cmdValidate(args[1:], stdout, stderr)
	case "records":
		err = cmdRecords(args[1:], stdout, stderr)
	case "summarize":
		err = cmdSummarize(args[1:], stdout, stderr)
	case "slurm":
		err = cmdSlurm(args[1:], stdout, stderr)
	case "results":
		err = cmdResults(args[1:], stdout, stderr)
	case "version", "--version":
		err = cmdVersion(args[1:], stdout)
	case "help", "-h", "--help":
		switch {
		case len(args) == 1:
			fmt.Fprint(stdout, usage)
			return 0
		case args[0] == "help" && len(args) == 2 && args[1] != "help":
			// uplink help CMD is uplink CMD --help.
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "uplink: %s: unexpected argument %q: want uplink help or uplink help COMMAND\n", args[0], args[len(args)-1])
		return 2
	default:
		fmt.Fprintf(stderr, "uplink: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "uplink:", shorten(err.Error()))
	}
	return exitStatus(err)
}

// cmdVersion prints the version; it takes no arguments but --help.
func cmdVersion(args []string, stdout io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "Usage:\n  uplink version\n\nPrints the version recorded with every result.")
		return nil
	}
	if len(args) > 0 {
		return usageError{fmt.Errorf("version: unexpected argument %q: version takes none", args[0])}
	}
	fmt.Fprintln(stdout, "uplink", buildVersion())
	return nil
}

// exitStatus is a command's exit status for its error (run).
func exitStatus(err error) int {
	var ie interruptedError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ie):
		return ie.exitCode()
	}
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}

// usageError marks a bad command line, as opposed to a failed job.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// executableHash is the first 12 hex digits of the SHA-256 of the running
// executable.
func executableHash() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// maxErrorLen bounds the error line printed: a message that quotes a huge
// input (a queue spec, a file's line) is cut in the middle.
const maxErrorLen = 4096

// shorten cuts the middle of a message longer than maxErrorLen, saying
// how much it cut.
func shorten(msg string) string {
	if len(msg) <= maxErrorLen {
		return msg
	}
	cut := len(msg) - maxErrorLen
	return fmt.Sprintf("%s … (%d bytes cut) … %s", msg[:maxErrorLen/2], cut, msg[len(msg)-maxErrorLen/2:])
}
