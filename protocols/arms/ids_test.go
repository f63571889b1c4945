package arms

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

func TestHashID(t *testing.T) {
	// SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad.
	want := []byte{0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3}
	got := HashID([]byte("abc"))
	if !bytes.Equal(got[:], want) {
		t.Fatalf("HashID(abc) = %x, want %x", got, want)
	}
}

func TestStructuredIDLayout(t *testing.T) {
	if StructuredPrefixLen != 81 || StructuredIDLen != 101 {
		t.Fatalf("lengths %d/%d, want 81/101", StructuredPrefixLen, StructuredIDLen)
	}
	data := []byte("segment bytes")
	p := StructuredPrefix{Version: StructuredIDVersion, Slot: 0x0102030405060708, Index: 0x0a0b0c0d}
	for i := range p.BlockRoot {
		p.BlockRoot[i] = 0xb0
		p.GroupID[i] = 0xc0
	}
	id, err := StructuredID(p, data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := append([]byte("SGID\x01\x01\x02\x03\x04\x05\x06\x07\x08"), bytes.Repeat([]byte{0xb0}, 32)...)
	want = append(want, bytes.Repeat([]byte{0xc0}, 32)...)
	want = append(want, 0x0a, 0x0b, 0x0c, 0x0d)
	want = append(want, sum[:20]...)
	if !bytes.Equal(id, want) {
		t.Fatalf("id\n%x\nwant\n%x", id, want)
	}
	q, h, err := ParseStructuredID(id)
	if err != nil {
		t.Fatal(err)
	}
	if q != p || h != HashID(data) {
		t.Fatalf("parse gave %+v %x", q, h)
	}
	if _, err := VerifyStructuredID(id, data); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyStructuredID(id, []byte("other")); err == nil {
		t.Error("hash mismatch accepted")
	}
}

func TestParseStructuredIDRejects(t *testing.T) {
	id, err := StructuredID(StructuredPrefix{Version: StructuredIDVersion}, []byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseStructuredID(id[:100]); err == nil {
		t.Error("short id accepted")
	}
	if _, _, err := ParseStructuredID(append(bytes.Clone(id), 0)); err == nil {
		t.Error("long id accepted")
	}
	bad := bytes.Clone(id)
	bad[0] = 'X'
	if _, _, err := ParseStructuredID(bad); err == nil {
		t.Error("bad magic accepted")
	}
	bad = bytes.Clone(id)
	bad[4] = 2
	if _, _, err := ParseStructuredID(bad); err == nil {
		t.Error("unknown version accepted")
	}
	if _, err := StructuredID(StructuredPrefix{Version: 9}, nil); err == nil {
		t.Error("encode with unknown version accepted")
	}
}

func TestWireForms(t *testing.T) {
	got, err := SegmentedWireForm(1<<20, Unit32K, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (WireForm{32, 32768, 101}); got != want {
		t.Fatalf("segmented = %+v, want %+v", got, want)
	}
	got, err = WholeWireForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if want := (WireForm{1, 1048576, 20}); got != want {
		t.Fatalf("whole = %+v, want %+v", got, want)
	}
	got, err = SegmentedWireForm(1<<20, Unit16K, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (WireForm{128, 16384, 20}); got != want {
		t.Fatalf("coded 16k = %+v, want %+v", got, want)
	}
	if _, err := WholeWireForm(0); err == nil {
		t.Error("empty whole wire form accepted")
	}
}
