// Package results holds what uplink's committed results give as data for
// the code: the resource table (resources.json), which uplink results
// generates from the records under this folder and sweep.EstimateCost
// reads.
package results

import _ "embed"

//go:embed resources.json
var resources string

// ResourcesJSON is the committed resource table (sweep.ReadResources reads
// it).
func ResourcesJSON() string { return resources }
