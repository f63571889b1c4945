package arms

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy"
)

// pick returns the shards whose indices are in keep.
func pick(shards []Shard, keep []int) []Shard {
	out := make([]Shard, 0, len(keep))
	for _, i := range keep {
		out = append(out, shards[i])
	}
	return out
}

func TestRSRecoverAnyK(t *testing.T) {
	p := MainnetLikePayload(11, 1<<20+1000) // K = 33, last shard 1000 bytes
	desc, shards, err := Encode(p, Unit32K)
	if err != nil {
		t.Fatal(err)
	}
	k := desc.Count
	if k != 33 || len(shards) != 66 || desc.TotalLength != len(p) || desc.SegmentSize != Unit32K {
		t.Fatalf("descriptor %+v with %d shards", desc, len(shards))
	}
	if l := len(shards[k-1].Data); l != 1000 {
		t.Fatalf("last data shard sent as %d bytes, want 1000", l)
	}
	for i, s := range shards {
		if i != k-1 && len(s.Data) != Unit32K {
			t.Fatalf("shard %d is %d bytes", i, len(s.Data))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		keep := rng.Perm(2 * k)[:k]
		got, err := Decode(desc, pick(shards, keep))
		if err != nil {
			t.Fatalf("trial %d (%v): %v", trial, keep, err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("trial %d: payload differs", trial)
		}
	}
	// All data shards withheld: parity alone.
	parity := make([]int, 0, k)
	for i := k; i < 2*k; i++ {
		parity = append(parity, i)
	}
	got, err := Decode(desc, pick(shards, parity))
	if err != nil || !bytes.Equal(got, p) {
		t.Fatalf("parity-only recovery: err %v, equal %v", err, bytes.Equal(got, p))
	}
	// K-1 shards are not enough.
	if _, err := Decode(desc, pick(shards, parity[:k-1])); err == nil {
		t.Fatal("recovered from K-1 shards")
	}
}

func TestRSRejectsCorruptShard(t *testing.T) {
	p := MainnetLikePayload(12, 200_000)
	desc, shards, err := Encode(p, Unit32K)
	if err != nil {
		t.Fatal(err)
	}
	k := desc.Count
	for _, victim := range []int{0, k - 1, k, 2*k - 1} {
		set := make([]Shard, 0, k)
		for i := range k { // the K data shards, one of them possibly parity-swapped
			set = append(set, shards[i])
		}
		if victim >= k {
			set[0] = shards[victim]
		}
		for j := range set {
			if set[j].Index == victim {
				d := bytes.Clone(set[j].Data)
				d[len(d)/2] ^= 0x40
				set[j] = Shard{Index: victim, Data: d}
			}
		}
		if _, err := Decode(desc, set); err == nil {
			t.Errorf("corrupted shard %d accepted", victim)
		}
	}
	// A descriptor from another payload rejects this set.
	other, _, err := Encode(MainnetLikePayload(13, 200_000), Unit32K)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(other, shards); err == nil {
		t.Error("foreign descriptor accepted")
	}
	// Wrong-length shard, bad index, conflicting duplicate.
	bad := append([]Shard(nil), shards...)
	bad[k-1].Data = append(bytes.Clone(bad[k-1].Data), 0)
	if _, err := Decode(desc, bad); err == nil {
		t.Error("padded last shard accepted")
	}
	if _, err := Decode(desc, []Shard{{Index: 2 * k, Data: make([]byte, Unit32K)}}); err == nil {
		t.Error("out-of-range index accepted")
	}
	d := bytes.Clone(shards[1].Data)
	d[0] ^= 1
	if _, err := Decode(desc, append(append([]Shard(nil), shards...), Shard{Index: 1, Data: d})); err == nil {
		t.Error("conflicting duplicate accepted")
	}
}

func TestRSTruncatedLastShard(t *testing.T) {
	for _, n := range []int{1, 100, Unit16K - 1, Unit16K, Unit16K + 1, 5*Unit16K + 7} {
		p := MainnetLikePayload(uint64(n), n)
		desc, shards, err := Encode(p, Unit16K)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		k := desc.Count
		wantLast := n - (k-1)*Unit16K
		if len(shards[k-1].Data) != wantLast {
			t.Fatalf("n=%d: last shard %d bytes, want %d", n, len(shards[k-1].Data), wantLast)
		}
		// Recover with the truncated last data shard present plus parity.
		set := append([]Shard{shards[k-1]}, shards[k:2*k-1]...)
		got, err := Decode(desc, set)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("n=%d: err %v, equal %v", n, err, bytes.Equal(got, p))
		}
	}
}

func TestRSShardLimit(t *testing.T) {
	p := MainnetLikePayload(5, 128*1024) // K = 128 at 1 KiB
	desc, shards, err := Encode(p, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Count != 128 || len(shards) != 256 {
		t.Fatalf("K=%d, %d shards", desc.Count, len(shards))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	got, err := Decode(desc, pick(shards, rng.Perm(256)[:128]))
	if err != nil || !bytes.Equal(got, p) {
		t.Fatalf("K=128 recovery: err %v", err)
	}
	if _, _, err := Encode(MainnetLikePayload(5, 128*1024+1), 1024); err == nil {
		t.Fatal("K=129 accepted")
	}
}

func TestMerkleRoot(t *testing.T) {
	h := func(b []byte) [32]byte { return sha256.Sum256(b) }
	cat := func(a, b [32]byte) [32]byte { return sha256.Sum256(append(a[:], b[:]...)) }
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	if got, want := MerkleRoot([][]byte{a}), h(a); got != want {
		t.Errorf("one leaf: %x, want %x", got, want)
	}
	if got, want := MerkleRoot([][]byte{a, b}), cat(h(a), h(b)); got != want {
		t.Errorf("two leaves: %x, want %x", got, want)
	}
	// Three leaves: the odd leaf is promoted, root = H(H(ha||hb) || hc).
	if got, want := MerkleRoot([][]byte{a, b, c}), cat(cat(h(a), h(b)), h(c)); got != want {
		t.Errorf("three leaves: %x, want %x", got, want)
	}
}

func TestDescriptorMarshal(t *testing.T) {
	desc, _, err := Encode(MainnetLikePayload(9, 70_000), Unit32K)
	if err != nil {
		t.Fatal(err)
	}
	b, err := desc.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != DescriptorLen || DescriptorLen != 48 {
		t.Fatalf("descriptor %d bytes", len(b))
	}
	var back Descriptor
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if back != desc {
		t.Fatalf("round trip %+v, want %+v", back, desc)
	}
	b[0] = 2
	if err := back.UnmarshalBinary(b); err == nil {
		t.Error("unknown version accepted")
	}
	b[0] = DescriptorVersion
	b[13] = 0xff // total length beyond count x segment size
	if err := back.UnmarshalBinary(b); err == nil {
		t.Error("inconsistent total length accepted")
	}
}

func TestRSCompressFirst(t *testing.T) {
	p := MainnetLikePayload(21, 1<<20)
	desc, shards, err := EncodeCompressFirst(p, Unit16K)
	if err != nil {
		t.Fatal(err)
	}
	clen := len(snappy.Encode(nil, p))
	if desc.TotalLength != clen || desc.Flags&FlagCompressFirst == 0 {
		t.Fatalf("descriptor %+v, compressed length %d", desc, clen)
	}
	wantK := (clen + Unit16K - 1) / Unit16K
	if desc.Count != wantK || desc.Count >= 64 {
		t.Fatalf("K = %d, want %d (fewer than the 64 uncompressed 16 KiB pieces)", desc.Count, wantK)
	}
	keep := make([]int, 0, desc.Count)
	for i := desc.Count; i < 2*desc.Count; i++ {
		keep = append(keep, i)
	}
	got, err := Decode(desc, pick(shards, keep))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p) {
		t.Fatal("compress-first round trip differs")
	}
}
