package arms

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func TestPayloadRatio(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 42, 1 << 40} {
		p := MainnetLikePayload(seed, 1<<20)
		if len(p) != 1<<20 {
			t.Fatalf("seed %d: length %d, want %d", seed, len(p), 1<<20)
		}
		c := snappy.Encode(nil, p)
		ratio := float64(len(p)) / float64(len(c))
		if ratio < 1.35 || ratio > 1.45 {
			t.Errorf("seed %d: snappy ratio %.4f (%d bytes), want [1.35, 1.45]", seed, ratio, len(c))
		}
		// About 746 KB for 1 MiB (docs/references.md, "Payload").
		if len(c) < 735_000 || len(c) > 760_000 {
			t.Errorf("seed %d: compressed %d bytes, want about 746 KB", seed, len(c))
		}
	}
}

func TestPayloadDeterministic(t *testing.T) {
	a := MainnetLikePayload(7, 300_000)
	b := MainnetLikePayload(7, 300_000)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different payloads")
	}
	if c := MainnetLikePayload(8, 300_000); bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same payload")
	}
	if p := MainnetLikePayload(7, 1000); !bytes.Equal(p, a[:1000]) {
		t.Fatal("shorter payload is not a prefix of the longer one")
	}
	if p := MainnetLikePayload(7, 0); len(p) != 0 {
		t.Fatalf("size 0 gave %d bytes", len(p))
	}
}
