package arms

import (
	"fmt"
	"strings"

	"github.com/klauspost/compress/snappy"
)

// Variant is an arm's protocol variant (the report, section 1, and its
// Appendix A): Whole is stock gossipsub with one message; A carries
// segments on one topic; B uses the partial-messages extension; C uses one
// topic per segment index.
type Variant string

// The variants.
const (
	VariantWhole Variant = "whole"
	VariantA     Variant = "A"
	VariantB     Variant = "B"
	VariantC     Variant = "C"
)

// Arm is one entry of the arm catalogue (docs/references.md, "Arms"; the
// report's Appendix A). Name is this package's name for the arm (policy
// plus unit), Published the name the reference records use, Report the
// report's name. Unit is 0 for the whole-message arm (its unit is the
// payload). Coded arms add K parity shards; CompressFirst arms
// snappy-compress the payload before segmenting and coding. StructuredIDs
// is set where the catalogue says so (acoded, lad_phase, aadaptds);
// Appendix A is silent on the ids of the other coded arms, which are
// therefore recorded with plain 20-byte ids until the research tree's
// arms.sh says otherwise. Forward is the forwarding policy as data;
// protocols/phase carries it out.
type Arm struct {
	Name          string
	Published     string
	Report        string
	Variant       Variant
	Unit          int
	Coded         bool
	CompressFirst bool
	StructuredIDs bool
	Forward       Forward
}

// Forward is an arm's forwarding policy as data (docs/references.md,
// "Arms", "Phase forwarding" and "FINAL"; the report's Appendix A). Stock
// arms (the whole message, tier 1) use the stock gossipsub router; the
// others uplink's phase router (protocols/phase).
type Forward struct {
	Stock bool // stock gossipsub forwarding (full-mesh push)
	Batch bool // the publisher publishes its units as one library batch
	// PushWidth is r; AR (-1) is the size-adaptive width AdaptivePushWidth.
	PushWidth int
	Budget    bool // the phase shift's push budget, decaying on IDONTWANT
	Final     bool // FINAL, the pull discipline (else eager pulls)
	// FinalFrom is the payload size from which FINAL applies; below it
	// pulls are eager (tier 3: "FINAL from 512 KiB"). 0: every size.
	FinalFrom int
	StopPull  bool // a complete node sends no more IWANTs (coded arms)
}

// AR marks the size-adaptive push width in Forward.PushWidth.
const AR = -1

// Catalogue is the arm table of the report's Appendix A, in its order.
var Catalogue = []Arm{
	{Name: "wholend", Published: "wholend", Report: "whole message", Variant: VariantWhole,
		Forward: Forward{Stock: true}},
	{Name: "atuned_32k", Published: "atuned", Report: "A-tuned 32k", Variant: VariantA, Unit: Unit32K,
		Forward: Forward{PushWidth: 2, Final: true}},
	{Name: "atuned_16k", Published: "am_k64", Report: "A-tuned 16k", Variant: VariantA, Unit: Unit16K,
		Forward: Forward{PushWidth: 2, Final: true}},
	{Name: "acoded_32k", Published: "acoded", Report: "coded A 32k", Variant: VariantA, Unit: Unit32K, Coded: true, StructuredIDs: true,
		Forward: Forward{PushWidth: 2, Final: true, StopPull: true}},
	{Name: "lad_phase_32k", Published: "lad_phase", Report: "the phase shift 32k", Variant: VariantA, Unit: Unit32K, StructuredIDs: true,
		Forward: Forward{PushWidth: 2, Budget: true}},
	{Name: "lad_batch_16k", Published: "lad_batch16", Report: "tier 1: segmentation + batch 16k", Variant: VariantA, Unit: Unit16K,
		Forward: Forward{Stock: true, Batch: true}},
	{Name: "aadaptds_16k", Published: "aadaptds", Report: "tier 2: size-adaptive A 16k", Variant: VariantA, Unit: Unit16K, StructuredIDs: true,
		Forward: Forward{PushWidth: AR, Final: true}},
	{Name: "aadaptcf_16k", Published: "aadaptcf", Report: "tier 3: size-adaptive A + compress-first code 16k", Variant: VariantA, Unit: Unit16K, Coded: true, CompressFirst: true,
		Forward: Forward{PushWidth: AR, Final: true, FinalFrom: 512 << 10, StopPull: true}},
	{Name: "aadaptcfd_16k", Published: "aadaptcfd", Report: "tier 3 with the discipline at every size", Variant: VariantA, Unit: Unit16K, Coded: true, CompressFirst: true,
		Forward: Forward{PushWidth: AR, Final: true, StopPull: true}},
	{Name: "acodedcf_32k", Published: "acodedcf", Report: "the compress-first code alone 32k", Variant: VariantA, Unit: Unit32K, Coded: true, CompressFirst: true,
		Forward: Forward{PushWidth: 2, Final: true, StopPull: true}},
	{Name: "bfixed_32k", Published: "bfixed", Report: "B tuned 32k", Variant: VariantB, Unit: Unit32K},
	{Name: "bcodedfc1_32k", Published: "bcodedfc1", Report: "coded B 32k", Variant: VariantB, Unit: Unit32K, Coded: true},
	{Name: "c_32k", Published: "c32", Report: "C 32k", Variant: VariantC, Unit: Unit32K,
		Forward: Forward{PushWidth: 2, Final: true}},
	// C + RS: stop-pull as every coded arm (docs/references.md, "FINAL");
	// Appendix A's row names only "C plus parity K".
	{Name: "crs_32k", Published: "c32rs", Report: "C + RS 32k", Variant: VariantC, Unit: Unit32K, Coded: true,
		Forward: Forward{PushWidth: 2, Final: true, StopPull: true}},
}

// LookupArm finds an arm by its Name, Published or Report name (exact
// match; "whole" is short for the whole-message arm). An unknown name is
// an error listing the valid names.
func LookupArm(name string) (Arm, error) {
	if name == "whole" {
		name = "wholend"
	}
	for _, a := range Catalogue {
		if name == a.Name || name == a.Published || name == a.Report {
			return a, nil
		}
	}
	valid := make([]string, 0, len(Catalogue))
	for _, a := range Catalogue {
		valid = append(valid, fmt.Sprintf("%s (%s, %q)", a.Name, a.Published, a.Report))
	}
	return Arm{}, fmt.Errorf("unknown arm %q; valid arms: %s", name, strings.Join(valid, ", "))
}

// WireForm is the arm's wire form for payload (docs/references.md, "Arms").
// For compress-first arms it compresses payload with snappy, since the
// message count follows the compressed length.
func (a Arm) WireForm(payload []byte) (WireForm, error) {
	if a.Variant == VariantWhole {
		wf, err := WholeWireForm(len(payload))
		if err != nil {
			return WireForm{}, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		return wf, nil
	}
	n := len(payload)
	if a.CompressFirst && n > 0 {
		n = len(snappy.Encode(nil, payload))
	}
	wf, err := SegmentedWireForm(n, a.Unit, a.Coded, a.StructuredIDs)
	if err != nil {
		return WireForm{}, fmt.Errorf("arm %s: %w", a.Name, err)
	}
	return wf, nil
}

// AdaptivePushWidth is AR, the size-adaptive push width of the tier 2 and
// tier 3 arms (docs/references.md, "Arms"; the report's Appendix A): 4 for
// payloads up to 256 KiB, 3 up to 1 MiB, 2 above; both bounds inclusive.
func AdaptivePushWidth(payloadLen int) int {
	switch {
	case payloadLen <= 256<<10:
		return 4
	case payloadLen <= 1<<20:
		return 3
	default:
		return 2
	}
}
