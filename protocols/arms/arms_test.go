package arms

import (
	"strings"
	"testing"
)

func TestCatalogue(t *testing.T) {
	names := []string{"wholend", "atuned_32k", "atuned_16k", "acoded_32k", "lad_phase_32k", "lad_batch_16k",
		"aadaptds_16k", "aadaptcf_16k", "aadaptcfd_16k", "acodedcf_32k", "bfixed_32k", "bcodedfc1_32k", "c_32k", "crs_32k"}
	if len(Catalogue) != len(names) {
		t.Fatalf("%d arms, want %d", len(Catalogue), len(names))
	}
	seen := map[string]bool{}
	for i, a := range Catalogue {
		if a.Name != names[i] {
			t.Errorf("arm %d is %s, want %s", i, a.Name, names[i])
		}
		for _, n := range []string{a.Name, a.Published, a.Report} {
			if seen[n] && n != a.Name {
				t.Errorf("name %q is ambiguous", n)
			}
			seen[n] = true
		}
		if a.CompressFirst && !a.Coded {
			t.Errorf("%s: compress-first without coding", a.Name)
		}
		want16 := strings.HasSuffix(a.Name, "_16k")
		want32 := strings.HasSuffix(a.Name, "_32k")
		if (want16 && a.Unit != Unit16K) || (want32 && a.Unit != Unit32K) || (!want16 && !want32 && a.Unit != 0) {
			t.Errorf("%s: unit %d", a.Name, a.Unit)
		}
	}
}

func TestLookupArm(t *testing.T) {
	for _, n := range []string{"acoded_32k", "acoded", "coded A 32k"} {
		a, err := LookupArm(n)
		if err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		if a.Name != "acoded_32k" || !a.Coded || !a.StructuredIDs || a.Unit != Unit32K || a.Variant != VariantA || a.CompressFirst {
			t.Fatalf("%q: %+v", n, a)
		}
	}
	a, err := LookupArm("C + RS 32k")
	if err != nil || a.Name != "crs_32k" || a.Variant != VariantC || !a.Coded {
		t.Fatalf("C + RS 32k: %+v, %v", a, err)
	}
	a, err = LookupArm("am_k64")
	if err != nil || a.Name != "atuned_16k" || a.Unit != Unit16K {
		t.Fatalf("am_k64: %+v, %v", a, err)
	}
	_, err = LookupArm("nope")
	if err == nil || !strings.Contains(err.Error(), "wholend") || !strings.Contains(err.Error(), "crs_32k") {
		t.Fatalf("unknown arm error: %v", err)
	}
}

func TestArmWireForm(t *testing.T) {
	p := MainnetLikePayload(1, 1<<20)
	cases := map[string]WireForm{
		"wholend":       {1, 1 << 20, 20},
		"atuned_32k":    {32, Unit32K, 20},
		"atuned_16k":    {64, Unit16K, 20},
		"acoded_32k":    {64, Unit32K, 101},
		"lad_phase_32k": {32, Unit32K, 101},
		"aadaptds_16k":  {64, Unit16K, 101},
		"c_32k":         {32, Unit32K, 20},
		"crs_32k":       {64, Unit32K, 20},
	}
	for name, want := range cases {
		a, err := LookupArm(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.WireForm(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	// acodedcf at 32 KiB: about 746 KB compressed is 23 segments, 46 with parity.
	a, _ := LookupArm("acodedcf_32k")
	got, err := a.WireForm(p)
	if err != nil {
		t.Fatal(err)
	}
	if got != (WireForm{46, Unit32K, 20}) {
		t.Errorf("acodedcf_32k: %+v", got)
	}
}

func TestAdaptivePushWidth(t *testing.T) {
	cases := []struct{ n, want int }{
		{1, 4}, {128 << 10, 4}, {256 << 10, 4}, {256<<10 + 1, 3},
		{512 << 10, 3}, {1 << 20, 3}, {1<<20 + 1, 2}, {2 << 20, 2},
	}
	for _, c := range cases {
		if got := AdaptivePushWidth(c.n); got != c.want {
			t.Errorf("AR(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
