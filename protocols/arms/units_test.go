package arms

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/snappy"

	"github.com/uplinksim/uplink/protocols/phase"
)

func TestUnitsPerArm(t *testing.T) {
	payload := MainnetLikePayload(7, 1<<20)
	for _, a := range Catalogue {
		if a.Variant == VariantB {
			if _, err := a.Units(payload, 1); err == nil {
				t.Errorf("%s: variant B gave units", a.Name)
			}
			continue
		}
		u, err := a.Units(payload, 1)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if len(u.Units) != u.Form.MessageCount {
			t.Errorf("%s: %d units, wire form %+v", a.Name, len(u.Units), u.Form)
		}
		for i, x := range u.Units {
			if got := MessageID(x.Data); got != x.ID {
				t.Fatalf("%s unit %d: MessageID of the data differs from the unit's id", a.Name, i)
			}
			if len(x.ID) != u.Form.IDWidth {
				t.Fatalf("%s unit %d: id %d bytes, wire form says %d", a.Name, i, len(x.ID), u.Form.IDWidth)
			}
			if a.StructuredIDs {
				pfx, err := VerifyStructuredID([]byte(x.ID), x.Data[StructuredPrefixLen:])
				if err != nil || int(pfx.Index) != i || pfx.Slot != 1 {
					t.Fatalf("%s unit %d: structured id %+v, %v", a.Name, i, pfx, err)
				}
			}
		}
		switch {
		case a.Variant == VariantWhole:
			if u.Need != 1 || len(u.Units[0].Data) != len(payload) {
				t.Errorf("%s: need %d of %d", a.Name, u.Need, len(u.Units))
			}
		case a.Coded:
			if u.Need*2 != len(u.Units) || u.Desc == nil || u.Desc.Count != u.Need {
				t.Errorf("%s: need %d of %d units", a.Name, u.Need, len(u.Units))
			}
		default:
			if u.Need != len(u.Units) {
				t.Errorf("%s: need %d of %d", a.Name, u.Need, len(u.Units))
			}
		}
	}
}

// Any K shards of a coded arm's units decode to the payload.
func TestUnitsCodedDecodeFromAnyK(t *testing.T) {
	payload := MainnetLikePayload(3, 300<<10)
	for _, name := range []string{"acoded_32k", "acodedcf_32k", "aadaptcf_16k", "crs_32k"} {
		a, err := LookupArm(name)
		if err != nil {
			t.Fatal(err)
		}
		u, err := a.Units(payload, 9)
		if err != nil {
			t.Fatal(err)
		}
		// The last K units (parity only, when the data shards are withheld).
		var shards []Shard
		for _, x := range u.Units[u.Need:] {
			d := x.Data
			if a.StructuredIDs {
				d = d[StructuredPrefixLen:]
			}
			shards = append(shards, Shard{Index: x.Index, Data: d})
		}
		got, err := Decode(*u.Desc, shards)
		if err != nil {
			t.Fatalf("%s: decode from parity alone: %v", name, err)
		}
		if string(got) != string(payload) {
			t.Fatalf("%s: decoded payload differs", name)
		}
	}
}

func TestArmPolicies(t *testing.T) {
	cases := []struct {
		arm     string
		payload int
		stock   bool
		want    phase.Policy
	}{
		{"wholend", 1 << 20, true, phase.Policy{}},
		{"lad_batch16", 1 << 20, true, phase.Policy{}},
		{"atuned", 1 << 20, false, phase.Policy{PushWidth: 2, Pull: phase.PullFinal, Final: phase.DefaultFinal()}},
		{"lad_phase", 1 << 20, false, phase.Policy{PushWidth: 2, Budget: true, Pull: phase.PullEager}},
		{"aadaptds", 1 << 20, false, phase.Policy{PushWidth: 3, Pull: phase.PullFinal, Final: phase.DefaultFinal()}},
		{"aadaptds", 2 << 20, false, phase.Policy{PushWidth: 2, Pull: phase.PullFinal, Final: phase.DefaultFinal()}},
		{"aadaptcf", 256 << 10, false, phase.Policy{PushWidth: 4, Pull: phase.PullEager, StopPull: true}},
		{"aadaptcf", 512 << 10, false, phase.Policy{PushWidth: 3, Pull: phase.PullFinal, Final: phase.DefaultFinal(), StopPull: true}},
		{"aadaptcfd", 256 << 10, false, phase.Policy{PushWidth: 4, Pull: phase.PullFinal, Final: phase.DefaultFinal(), StopPull: true}},
		{"c32rs", 1 << 20, false, phase.Policy{PushWidth: 2, Pull: phase.PullFinal, Final: phase.DefaultFinal(), StopPull: true}},
	}
	for _, c := range cases {
		a, err := LookupArm(c.arm)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := a.Policy(c.payload)
		if ok == c.stock {
			t.Errorf("%s: phase policy %v, want stock %v", c.arm, ok, c.stock)
			continue
		}
		if p != c.want {
			t.Errorf("%s at %d bytes: policy %+v, want %+v", c.arm, c.payload, p, c.want)
		}
	}
}

// Variant B's parts: compressed one by one (about 1.4 : 1 on the
// mainnet-like payload), rebuilt from all parts (B tuned) or from the K
// parity parts alone (coded B).
func TestPartsVariantB(t *testing.T) {
	payload := MainnetLikePayload(5, 1<<20)
	tuned, _ := LookupArm("bfixed")
	p, err := tuned.Parts(payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Parts) != 32 || p.Need != 32 || p.Desc != nil {
		t.Fatalf("B tuned: %d parts, need %d", len(p.Parts), p.Need)
	}
	size := 0
	for _, x := range p.Parts {
		size += len(x)
	}
	if r := float64(len(payload)) / float64(size); r < 1.3 || r > 1.5 {
		t.Fatalf("parts compress %.2f : 1, want about 1.40", r)
	}
	got, err := p.Rebuild(p.Parts)
	if err != nil || string(got) != string(payload) {
		t.Fatalf("rebuild: %v", err)
	}
	held := append([][]byte(nil), p.Parts...)
	held[3] = nil
	if _, err := p.Rebuild(held); err == nil {
		t.Fatal("B tuned rebuilt with a part missing")
	}
	coded, _ := LookupArm("bcodedfc1")
	c, err := coded.Parts(payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Parts) != 64 || c.Need != 32 || c.Desc == nil {
		t.Fatalf("coded B: %d parts, need %d", len(c.Parts), c.Need)
	}
	parity := make([][]byte, 64)
	copy(parity[32:], c.Parts[32:])
	if got, err := c.Rebuild(parity); err != nil || string(got) != string(payload) {
		t.Fatalf("coded B from the parity parts: %v", err)
	}
	if _, err := tuned.Units(payload, 1); err == nil {
		t.Fatal("variant B has no units")
	}
}

// TestUnitsSnappy: with the snappy wire encoding every unit is the
// snappy block encoding of its raw bytes (structured ids kept in front, in
// the clear, and naming the compressed bytes), and the mainnet-like
// payload's whole message shrinks about 1.40 : 1 (docs/references.md,
// "Payload"), its 32 KiB segments about 1.30 : 1; parity shards, which
// are random, do not shrink.
func TestUnitsSnappy(t *testing.T) {
	payload := MainnetLikePayload(7, 1<<20)
	for _, name := range []string{"whole", "atuned_32k", "acoded_32k", "c_32k"} {
		a, err := LookupArm(name)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := a.Units(payload, 1)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := a.UnitsEncoded(payload, 1, EncodingSnappy)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc.Units) != len(raw.Units) || enc.Need != raw.Need || enc.Form != raw.Form {
			t.Fatalf("%s: snappy changed the units' count, need or wire form", name)
		}
		rawBytes, encBytes := 0, 0
		for i, u := range enc.Units {
			d := u.Data
			if a.StructuredIDs {
				if _, err := VerifyStructuredID([]byte(u.ID), d[StructuredPrefixLen:]); err != nil {
					t.Fatalf("%s unit %d: structured id: %v", name, i, err)
				}
				d = d[StructuredPrefixLen:]
			} else if MessageID(u.Data) != u.ID {
				t.Fatalf("%s unit %d: id is not the compressed data's", name, i)
			}
			want := raw.Units[i].Data
			if a.StructuredIDs {
				want = want[StructuredPrefixLen:]
			}
			got, err := snappy.Decode(nil, d)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s unit %d: does not decode to the raw unit (%v)", name, i, err)
			}
			rawBytes += len(want)
			encBytes += len(d)
		}
		ratio := float64(rawBytes) / float64(encBytes)
		// Each unit is compressed on its own, so a 32 KiB segment finds
		// fewer repeats than the whole payload does.
		lo, hi := 1.25, 1.35
		switch name {
		case "whole":
			lo, hi = 1.35, 1.45
		case "acoded_32k": // half the units are parity, which is random
			lo, hi = 1.05, 1.25
		}
		if ratio < lo || ratio > hi {
			t.Errorf("%s: ratio %.2f; want %.2f to %.2f", name, ratio, lo, hi)
		}
	}
	if _, err := ParseEncoding("zstd"); err == nil {
		t.Error("an unknown encoding should be rejected")
	}
}
