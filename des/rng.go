package des

import (
	"hash/fnv"
	"math/rand/v2"
)

// Streams derives independent random streams from one cell seed: one per
// component name, so adding a component never shifts another's draws. The
// same seed and name always give the same stream.
type Streams struct {
	seed uint64
}

// NewStreams returns the stream factory for seed.
func NewStreams(seed uint64) Streams { return Streams{seed: seed} }

// Seed is the cell seed the streams derive from.
func (s Streams) Seed() uint64 { return s.seed }

// Stream returns a new PCG generator for the named component.
func (s Streams) Stream(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(Mix64(s.seed), Mix64(h.Sum64()^s.seed)))
}

// Mix64 is the splitmix64 finaliser: a cheap bijective scramble of x.
func Mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
