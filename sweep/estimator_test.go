package sweep

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/protocols/cell"
)

// TestWithMeasured: a measured kind the table lacks is added; one it has
// keeps the table's wall times and cells and takes the larger peak.
func TestWithMeasured(t *testing.T) {
	table := MeasureResources([]*cell.Record{
		resourceRecord(500, 70, "c_32k", "quic", "shadow", 7<<20, 200),
		resourceRecord(500, 70, "wholend", "quic", "shadow", 14<<20, 540),
	}, []string{"x", "x"})
	measured := MeasureResources([]*cell.Record{
		resourceRecord(500, 70, "c_32k", "quic", "shadow", 8<<20, 900),
		resourceRecord(500, 70, "wholend", "quic", "shadow", 13<<20, 100),
		resourceRecord(500, 70, "atuned_32k", "quic", "shadow", 5<<20, 250),
	}, []string{"y", "y", "y"})
	got := withMeasured(table, measured)
	require.Len(t, got, 3)
	byArm := map[string]Resource{}
	for _, r := range got {
		byArm[r.Arm] = r
	}
	require.Equal(t, 8.0*1024, byArm["c_32k"].RSSMaxMiB, "the larger peak")
	require.Equal(t, 200.0, byArm["c_32k"].WallMedianS, "the table's wall time")
	require.Equal(t, []string{"x"}, byArm["c_32k"].Sources)
	require.Equal(t, 14.0*1024, byArm["wholend"].RSSMaxMiB, "a smaller measured peak leaves the table's")
	require.Equal(t, measured[0], byArm["atuned_32k"], "a kind the table lacks")
	require.Len(t, table, 2, "the table itself is left alone")
}

// TestEstimatorLearns: a kind neither the committed table nor the records
// know costs EstimateCost's estimate; once a record of it is added, its
// measured cost; a nil record changes nothing.
func TestEstimatorLearns(t *testing.T) {
	c := cell.Config{Arm: "atuned_32k", N: 500, Degree: 70, Payload: 1 << 20, Transport: "quic",
		Profile: cell.Profile{Name: "no-such-profile"}, Encoding: "no-such-encoding"}
	e := NewEstimator([]*cell.Record{nil})
	require.Equal(t, EstimateCost(c), e.Cost(c))
	require.Equal(t, formulaCost(c), e.Cost(c))

	e.Add(nil)
	rec := resourceRecord(500, 70, "atuned_32k", "quic", "no-such-profile", 5<<20, 250)
	rec.Wire.Encoding = "no-such-encoding"
	e.Add(rec)
	require.Equal(t, Cost{Wall: 250 * time.Second, RSS: 5 << 30}, e.Cost(c))
	require.Equal(t, formulaCost(c), EstimateCost(c), "EstimateCost is the committed table's alone")

	// Another segmented arm of the kind, never measured, costs the
	// measured one's (segmentedCost), from the records given at the start.
	other := c
	other.Arm = "c_32k"
	require.Equal(t, Cost{Wall: 250 * time.Second, RSS: 5 << 30}, NewEstimator([]*cell.Record{rec}).Cost(other))
}
