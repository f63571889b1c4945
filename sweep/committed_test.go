package sweep

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCommittedRecordsValid: every record committed under results/ passes
// the one validator (ScanRecords, CheckRecord): no line of those files is
// refused. It reads about 300 MB (about 10 s), so -short skips it.
func TestCommittedRecordsValid(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every committed record (about 300 MB)")
	}
	paths, err := filepath.Glob(filepath.Join("..", "results", "*", "records.jsonl"))
	require.NoError(t, err)
	if len(paths) == 0 {
		t.Skip("no results folder with records")
	}
	start := time.Now()
	total := 0
	for _, p := range paths {
		n, problems, err := CheckFile(p)
		require.NoError(t, err, p)
		for _, pr := range problems {
			t.Errorf("%v", pr)
		}
		require.Positive(t, n, p)
		total += n
	}
	t.Logf("%d records in %d files checked in %s", total, len(paths), time.Since(start).Round(time.Millisecond))
}
