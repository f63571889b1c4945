package cell

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// TestRunNeedsWait: without the bubble's wait Run refuses to start, before
// it builds anything.
func TestRunNeedsWait(t *testing.T) {
	rec, err := Run(Config{N: 4, Degree: 2, Payload: 1})
	require.ErrorIs(t, err, ErrNoWait)
	require.ErrorContains(t, err, "synctest.Wait")
	require.Nil(t, rec)
}

// TestKeyIgnoresHowACellRuns: the keys of two cells are those their
// records have always had, and setting how a cell runs (its wait, phase
// hook, progress writer, cores, verification) leaves them unchanged.
func TestKeyIgnoresHowACellRuns(t *testing.T) {
	h, err := LookupProfile("harness")
	require.NoError(t, err)
	s, err := LookupProfile("shadow")
	require.NoError(t, err)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Seed: 7, N: 20, Degree: 10, Payload: 256 << 10, Profile: h}, "e23a7681f62c4aee8866f760"},
		{Config{Arm: "atuned_32k", Seed: 3, N: 50, Degree: 12, Payload: 1 << 20, Profile: s, Transport: "tcp",
			Warmup: Warmup{Kind: "payload", Gap: des.Second}, Encoding: "snappy"}, "0f593377874bb005f5666361"},
	} {
		require.Equal(t, c.want, c.cfg.Key())
		run := c.cfg
		run.Wait = func() {}
		run.PhaseHook = func(string) {}
		run.Progress = io.Discard
		run.SetupProcs, run.Verify, run.PerNode = 2, true, true
		require.Equal(t, c.want, run.Key())
	}
}
