package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// commandFlags returns the parsed flags of uplink run or validate with
// args (planned, not run).
func commandFlags(t *testing.T, command string, args ...string) *pflag.FlagSet {
	t.Helper()
	sp, err := planCommand(append([]string{command}, args...), io.Discard, io.Discard)
	require.NoError(t, err)
	require.NotNil(t, sp.flags)
	return sp.flags
}

// TestCommonFlags: run and validate define each common flag from one
// definition: the same default and help in both, but for the differences
// kept on purpose (--seeds: run's 7, validate's none, the table's; the
// end of --knob's help, where the overrides apply).
func TestCommonFlags(t *testing.T) {
	runFS := commandFlags(t, "run")
	valFS := commandFlags(t, "validate", "--table", "s5_sndbuf")
	g := newFlagGroups("x", "", io.Discard, groupCell, groupNet, groupProtocol, groupOutput, groupPerf)
	var c commonFlags
	c.register(g, commonDefaults{})
	_, err := g.parse(nil, io.Discard)
	require.NoError(t, err)
	var names []string
	g.fs.VisitAll(func(f *pflag.Flag) {
		names = append(names, f.Name)
		r, v := runFS.Lookup(f.Name), valFS.Lookup(f.Name)
		require.NotNil(t, r, "run lacks --%s", f.Name)
		require.NotNil(t, v, "validate lacks --%s", f.Name)
		switch f.Name {
		case "seeds":
			require.Equal(t, "7", r.DefValue)
			require.Equal(t, "", v.DefValue)
		case "knob":
			// With no order of its own, the help is the shared part.
			require.True(t, strings.HasPrefix(r.Usage, f.Usage), r.Usage)
			require.True(t, strings.HasPrefix(v.Usage, f.Usage), v.Usage)
			require.NotEqual(t, r.Usage, v.Usage)
		default:
			require.Equal(t, r.DefValue, v.DefValue, f.Name)
			require.Equal(t, r.Usage, v.Usage, f.Name)
			require.Equal(t, f.Usage, r.Usage, f.Name)
		}
	})
	require.ElementsMatch(t, []string{"seeds", "network", "knob", "gossip", "wire-encoding", "counts-at", "list-cells", "quiet", "progress-every",
		"jobs", "shard", "mem", "skip-over-mem", "partitions", "gomaxprocs", "setup-procs", "setup-quantum", "gogc", "memlimit"}, names)

	checkUsageErrors(t, []usageCase{
		{[]string{"run", "--seeds", ""}, "--seeds: \"\": want seeds"},
		{[]string{"validate", "--table", "s5_sndbuf", "--jobs", "0"}, "--jobs: \"0\""},
		{[]string{"run", "--gomaxprocs", "-1"}, "--gomaxprocs: \"-1\""},
		{[]string{"run", "--partitions", "0"}, "--partitions: \"0\""},
		{[]string{"run", "--partitions", "257"}, "--partitions: \"257\""},
		{[]string{"run", "--partitions", "2", "--network", "simnet"}, "--network simnet runs in one bubble"},
		{[]string{"run", "--partitions", "30", "--nodes", "20", "--degree", "6"}, "more partitions than the cell's 20 nodes"},
		{[]string{"validate", "--study", "pie", "--wire-encoding", "zip"}, "--wire-encoding"},
		{[]string{"run", "--progress-every", "1ms"}, "--progress-every 1ms"},
		{[]string{"run", "--counts-at", "noon"}, "--counts-at \"noon\": want last-completion or window-end"},
		{[]string{"validate", "--table", "s5_sndbuf", "--gossip", "Dlazy"}, "--gossip \"Dlazy\": want name=value"},
	})
}

// TestHelpGroups: run --help and validate --help print to stdout, exit
// 0, and list every flag once, under its heading, the headings in order.
func TestHelpGroups(t *testing.T) {
	for _, c := range []struct {
		command  string
		args     []string
		headings []string
	}{
		{"run", nil, []string{"Cell", "Network and queues", "Protocol", "Output", "Performance"}},
		{"validate", []string{"--table", "s5_sndbuf"}, []string{"Table or study", "Cell", "Network and queues", "Protocol", "Output", "Performance"}},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run([]string{c.command, "--help"}, &out, &errb), errb.String())
		help := out.String()
		require.True(t, strings.HasPrefix(help, "Usage: uplink "+c.command+" [flags]\n"), help)
		at := 0
		for _, h := range c.headings {
			i := strings.Index(help, "\n"+h+":\n")
			require.Greater(t, i, at, "%s: heading %q missing or out of order", c.command, h)
			at = i
		}
		commandFlags(t, c.command, c.args...).VisitAll(func(f *pflag.Flag) {
			n := len(regexp.MustCompile(`(?m)^ +--`+regexp.QuoteMeta(f.Name)+`[ \[=]`).FindAllString(help, -1))
			require.Equal(t, 1, n, "%s --help lists --%s %d times", c.command, f.Name, n)
		})
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"run", "--help"}, &out, &errb))
	require.Regexp(t, `(?s)\nPerformance:\n.*--jobs int +cells run in parallel`, out.String())
	require.Regexp(t, `(?s)\nNetwork and queues:\n.*--uplink-qdisc string`, out.String())
}
