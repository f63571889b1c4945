package outfile_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/uplinksim/uplink/internal/outfile"
)

// A report is written in place of the old one; a merged records file is
// not allowed to replace one that exists.
func Example() {
	dir, _ := os.MkdirTemp("", "outfile-example-")
	defer os.RemoveAll(dir)
	page := filepath.Join(dir, "report.md")
	write := func(w io.Writer) error { _, err := io.WriteString(w, "# Study\n"); return err }

	fmt.Println(outfile.WriteFile(page, outfile.Replace, write))
	fmt.Println(outfile.WriteFile(page, outfile.Replace, write))
	err := outfile.WriteFile(page, outfile.NoClobber, write)
	fmt.Println(errors.Is(err, outfile.ErrExists))
	// Output:
	// <nil>
	// <nil>
	// true
}
