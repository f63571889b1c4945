package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/protocols/partial"
	"github.com/uplinksim/uplink/queues"
)

// Comparisons a user defines (docs/studies.md): a grid of settings
// (uplink run --vary) and a study file (uplink validate --study
// FILE.json). Both are Studies: their cells, records, table and reading
// are the built-in studies' own.

// MaxCells bounds the cells of a comparison a user defines: variants ×
// profiles × arms × seeds.
const MaxCells = 1000

// The settings a variant can change besides the profile knobs
// (cell.KnobDocs) and the gossip knobs (GossipSettings).
const (
	SettingProfile   = "profile"
	SettingTransport = "transport"
)

// GossipSettings are the gossipsub knobs a variant can change (those
// cell.Gossip.Set accepts: the ones the study leaves open).
var GossipSettings = []string{"Dlazy", "gossip-factor", "history-gossip", "gossip-retransmission", "flood-publish"}

// Transports are the values of the transport setting.
var Transports = []string{"quic", "tcp"}

// Kinds of setting.
const (
	kindProfile   = "profile"
	kindTransport = "transport"
	kindKnob      = "knob"
	kindGossip    = "gossip"
)

// SettingNames lists every setting a variant can change: profile,
// transport, the profile knobs, the gossip knobs.
func SettingNames() []string {
	out := []string{SettingProfile, SettingTransport}
	for _, k := range cell.KnobDocs() {
		out = append(out, k.Name)
	}
	return append(out, GossipSettings...)
}

// IsGossipSetting reports whether name is a gossip knob (--gossip) rather
// than a profile knob (--knob).
func IsGossipSetting(name string) bool { return slices.Contains(GossipSettings, name) }

// settingKind tells what a setting is, or an error naming the valid ones.
func settingKind(name string) (string, error) {
	switch {
	case name == SettingProfile:
		return kindProfile, nil
	case name == SettingTransport:
		return kindTransport, nil
	case IsGossipSetting(name):
		return kindGossip, nil
	}
	for _, k := range cell.KnobDocs() {
		if k.Name == name {
			return kindKnob, nil
		}
	}
	return "", fmt.Errorf("unknown setting %q; valid: %s", name, strings.Join(SettingNames(), ", "))
}

// checkSetting checks one value of a setting: a profile that exists, a
// transport, or a knob value each of profiles accepts (every profile when
// none is given).
func checkSetting(name, value string, profiles []string) error {
	kind, err := settingKind(name)
	if err != nil {
		return err
	}
	switch kind {
	case kindProfile:
		_, err = cell.LookupProfile(value)
	case kindTransport:
		if !slices.Contains(Transports, value) {
			err = fmt.Errorf("transport %q: want %s", value, strings.Join(Transports, " or "))
		}
	case kindGossip:
		g := cell.StudyGossip()
		err = g.Set(name, value)
	case kindKnob:
		if len(profiles) == 0 {
			profiles = cell.ProfileNames()
		}
		for _, pn := range profiles {
			p, perr := cell.LookupProfile(pn)
			if perr != nil {
				return perr
			}
			if err = p.Set(name, value); err != nil {
				return fmt.Errorf("on profile %s: %w", pn, err)
			}
			if strings.HasSuffix(name, "-qdisc") {
				if err = checkQdiscs(p.Knobs()[name]); err != nil {
					return fmt.Errorf("on profile %s: %w", pn, err)
				}
			}
		}
	}
	return err
}

// checkQdiscs builds every discipline of a queue assignment (a spec or a
// mix, as a profile stores it), as a cell's check does, so that a bad
// spec is refused before any cell is built.
func checkQdiscs(assign string) error {
	if assign == "" {
		return nil // host-qdisc: none
	}
	specs, err := cell.AssignQdiscs(assign, 1000, 1)
	if err != nil {
		return err
	}
	built := map[string]bool{}
	for _, spec := range specs {
		if spec == "" || built[spec] {
			continue
		}
		built[spec] = true
		if _, err := queues.New(spec, rand.New(rand.NewPCG(1, 1))); err != nil {
			return err
		}
	}
	return nil
}

// Axis is one setting a grid varies and its values, in order; every
// axis's first value is the baseline's.
type Axis struct {
	Setting string
	Values  []string
}

// GridSize is the number of variants axes make, the product of their
// value counts (saturating at MaxProduct).
func GridSize(axes []Axis) int {
	n := 1
	for _, a := range axes {
		n = MulCells(n, len(a.Values))
	}
	return n
}

// MaxProduct is where MulCells saturates: far over MaxCells, far under
// overflow.
const MaxProduct = 1 << 40

// MulCells multiplies counts of cells, saturating at MaxProduct.
func MulCells(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > MaxProduct/b {
		return MaxProduct
	}
	return a * b
}

// CheckAxes checks a grid's axes before any cell is built: each a known
// setting given once, with at least two values, none empty or given
// twice, each accepted by its setting (a profile knob on every profile
// the grid runs: profiles, or the values of a profile axis).
func CheckAxes(axes []Axis, profiles []string) error {
	if len(axes) == 0 {
		return errors.New("no setting to vary")
	}
	for _, a := range axes {
		if a.Setting == SettingProfile {
			profiles = a.Values
		}
	}
	seen := map[string]bool{}
	for _, a := range axes {
		if _, err := settingKind(a.Setting); err != nil {
			return err
		}
		if seen[a.Setting] {
			return fmt.Errorf("%s varied twice: give all its values in one list", a.Setting)
		}
		seen[a.Setting] = true
		switch len(a.Values) {
		case 0:
			return fmt.Errorf("%s: no values; want %s=V1,V2,...", a.Setting, a.Setting)
		case 1:
			return fmt.Errorf("%s=%s: one value compares nothing; give two or more (or set it in every cell with --knob, --gossip, --transport or --profile)", a.Setting, a.Values[0])
		}
		vals := map[string]bool{}
		for _, v := range a.Values {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("%s: an empty value in %q", a.Setting, strings.Join(a.Values, ","))
			}
			if vals[v] {
				return fmt.Errorf("%s: value %q given twice", a.Setting, v)
			}
			vals[v] = true
			if err := checkSetting(a.Setting, v, profiles); err != nil {
				return fmt.Errorf("%s=%s: %w", a.Setting, v, err)
			}
		}
	}
	return nil
}

// Grid expands axes over template into variants: every combination of
// their values, the first axis varying slowest, so that the first variant
// (the baseline) takes every axis's first value. A variant's label names
// its values, setting=value joined by ", ". The axes must have passed
// CheckAxes.
func Grid(template Variant, axes []Axis) ([]Variant, error) {
	if n := GridSize(axes); n > MaxCells {
		return nil, fmt.Errorf("a grid of %d variants: over the limit of %d cells", n, MaxCells)
	}
	out := []Variant{cloneVariant(template)}
	for _, a := range axes {
		kind, err := settingKind(a.Setting)
		if err != nil {
			return nil, err
		}
		var next []Variant
		for _, base := range out {
			for _, val := range a.Values {
				v := cloneVariant(base)
				label := a.Setting + "=" + val
				if v.Label == "" {
					v.Label = label
				} else {
					v.Label += ", " + label
				}
				switch kind {
				case kindProfile:
					v.Profile = val
				case kindTransport:
					v.Transport = val
				case kindGossip:
					v.Gossip[a.Setting] = val
				case kindKnob:
					v.Knobs[a.Setting] = val
				}
				next = append(next, v)
			}
		}
		out = next
	}
	return out, nil
}

// cloneVariant copies v with maps of its own, never nil.
func cloneVariant(v Variant) Variant {
	k, g := map[string]string{}, map[string]string{}
	for name, val := range v.Knobs {
		k[name] = val
	}
	for name, val := range v.Gossip {
		g[name] = val
	}
	v.Knobs, v.Gossip, v.Skip = k, g, slices.Clone(v.Skip)
	return v
}

// CheckSize refuses a comparison of more than MaxCells cells, saying
// what it counted.
func CheckSize(cells int, what string) error {
	if cells > MaxCells {
		return fmt.Errorf("%s = %d cells: over the limit of %d cells a comparison may run; vary fewer values or give fewer seeds, arms or profiles", what, cells, MaxCells)
	}
	return nil
}

// CheckDistinct refuses a study two of whose variants make the same cell
// for an arm (a knob that cannot change the arm's cell, such as
// phase-rules for the whole message): its comparison would pair a cell's
// record with itself.
func (s Study) CheckDistinct(cells []StudyCell) error {
	type at struct{ variant, arm string }
	first := map[string]at{}
	for _, c := range cells {
		for _, cfg := range c.Configs {
			k := cfg.Key()
			here := at{s.Variants[c.Variant].Label, c.Arm.Published}
			if prev, ok := first[k]; ok && prev != here {
				return fmt.Errorf("variants %q and %q make the same cell for arm %s (key %s): what they change does not reach it; drop one", prev.variant, here.variant, here.arm, k)
			}
			first[k] = here
		}
	}
	return nil
}

// studyFile is a study file's JSON (docs/studies.md).
type studyFile struct {
	Name     string        `json:"name"`
	Question string        `json:"question"`
	Arms     []string      `json:"arms"`
	Nodes    int           `json:"nodes"`
	Degree   int           `json:"degree"`
	Payload  string        `json:"payload"`
	Seeds    []uint64      `json:"seeds"`
	Stat     string        `json:"stat"`
	BaseArm  string        `json:"base_arm"`
	Note     string        `json:"note"`
	Variants []variantFile `json:"variants"`
	Claims   []claimFile   `json:"claims"`
}

// claimFile is one claim of a study file (Claim): a prediction the
// study's answer judges.
type claimFile struct {
	Text       string   `json:"text"`
	Variant    string   `json:"variant"`
	Against    string   `json:"against"`
	AgainstArm string   `json:"against_arm"`
	Arms       []string `json:"arms"`
	Stat       string   `json:"stat"`
	// Direction is "lower" (the statistic falls: faster), "higher" or
	// "same".
	Direction string `json:"direction"`
	// Margin and Requires: Claim's (a percentage; a claim's number from 1).
	Margin   float64 `json:"margin"`
	Requires int     `json:"requires"`
}

// claimDirections maps a claim file's direction to Claim.Direction.
var claimDirections = map[string]int{"lower": -1, "higher": +1, "same": 0}

type variantFile struct {
	Label     string            `json:"label"`
	Profile   string            `json:"profile"`
	Transport string            `json:"transport"`
	Knobs     map[string]string `json:"knobs"`
	Gossip    map[string]string `json:"gossip"`
	Payload   string            `json:"payload"`
	Nodes     int               `json:"nodes"`
	Skip      []string          `json:"skip"`
	// BRulesOff: variant B's ledger rules switched off, comma-separated
	// (partial.ParseRulesOff).
	BRulesOff string `json:"b_rules_off"`
	// BTimeout: variant B's first request timeout, a duration ("800ms");
	// BFixed keeps it from adapting (Variant's).
	BTimeout string `json:"b_timeout"`
	BFixed   bool   `json:"b_fixed"`
	// Partitions, Replicate, Network, Encoding and Base: Variant's.
	Partitions int    `json:"partitions"`
	Replicate  int    `json:"replicate"`
	Network    string `json:"network"`
	Encoding   string `json:"encoding"`
	Base       bool   `json:"base"`
}

// Bounds of a study file.
const (
	maxStudyFile  = 1 << 20 // bytes
	maxStudySeeds = 10_000
	maxPayload    = 1 << 30
	maxReplicate  = 1000
)

// CompareStats are the statistics a study file may compare variants by.
var CompareStats = []string{"p50", "p90", "p99", "last"}

// ReadStudy reads a study file (JSON, docs/studies.md): a field it does
// not know, a second value after the study, or a setting a variant cannot
// take is an error naming it.
func ReadStudy(r io.Reader) (Study, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxStudyFile+1))
	if err != nil {
		return Study{}, err
	}
	if len(data) > maxStudyFile {
		return Study{}, fmt.Errorf("study file over %d bytes", maxStudyFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f studyFile
	if err := dec.Decode(&f); err != nil {
		return Study{}, fmt.Errorf("study file: %w", err)
	}
	if dec.More() {
		return Study{}, errors.New("study file: more than one JSON value; a study file is one object")
	}
	s := Study{Name: strings.TrimSpace(f.Name), Question: f.Question, Arms: f.Arms, N: f.Nodes, Degree: f.Degree,
		Seeds: f.Seeds, Stat: f.Stat, BaseArm: f.BaseArm, Note: f.Note}
	bad := func(format string, a ...any) (Study, error) {
		return Study{}, fmt.Errorf("study file %q: "+format, append([]any{s.Name}, a...)...)
	}
	if s.Name == "" {
		return Study{}, errors.New("study file: no name")
	}
	if len(s.Arms) == 0 {
		return bad("no arms (catalogue names: uplink run --list-arms)")
	}
	for _, a := range s.Arms {
		if _, err := arms.LookupArm(a); err != nil {
			return bad("arms: %w", err)
		}
	}
	if s.N < 2 || s.N > des.MaxNodes {
		return bad("nodes %d: want 2 to %d", s.N, des.MaxNodes)
	}
	if s.Degree < 0 || s.Degree >= s.N {
		return bad("degree %d: want 1 to nodes-1 (%d), or 0 for the report's 70 capped at nodes-1", s.Degree, s.N-1)
	}
	if len(s.Seeds) == 0 || len(s.Seeds) > maxStudySeeds {
		return bad("seeds: want 1 to %d seeds, such as [7, 8, 9]", maxStudySeeds)
	}
	for i, seed := range s.Seeds {
		if slices.Contains(s.Seeds[:i], seed) {
			return bad("seed %d given twice", seed)
		}
	}
	if s.Stat != "" && !slices.Contains(CompareStats, s.Stat) {
		return bad("stat %q: want %s", s.Stat, strings.Join(CompareStats, ", "))
	}
	if s.BaseArm != "" && !slices.Contains(s.Arms, s.BaseArm) {
		return bad("base_arm %q is not one of its arms (%s)", s.BaseArm, strings.Join(s.Arms, ", "))
	}
	if s.Payload, err = filePayload(f.Payload); err != nil {
		return bad("payload: %w", err)
	}
	if s.Payload == 0 {
		s.Payload = 1 << 20
	}
	if len(f.Variants) < 2 {
		return bad("%d variants: want two or more, the first the baseline", len(f.Variants))
	}
	labels := map[string]bool{}
	for i, vf := range f.Variants {
		v := Variant{Label: strings.TrimSpace(vf.Label), Profile: vf.Profile, Transport: vf.Transport, Knobs: vf.Knobs, Gossip: vf.Gossip, Skip: vf.Skip,
			Partitions: vf.Partitions, Replicate: vf.Replicate, Network: vf.Network, Encoding: vf.Encoding, Base: vf.Base, Nodes: vf.Nodes}
		switch {
		case v.Network != "" && v.Network != cell.BackendSimnet:
			return bad("variant %q: network %q: want %q, or none for uplink's model", v.Label, v.Network, cell.BackendSimnet)
		case v.Encoding != "" && !validEncoding(v.Encoding):
			return bad("variant %q: encoding %q: want raw or snappy", v.Label, v.Encoding)
		case v.Partitions < 0 || v.Partitions > cell.MaxPartitions:
			return bad("variant %q: partitions %d: want 1 to %d (0: the command's --partitions)", v.Label, v.Partitions, cell.MaxPartitions)
		case vf.Nodes != 0 && (vf.Nodes < 2 || vf.Nodes > des.MaxNodes):
			return bad("variant %q: nodes %d: want 2 to %d (0: the study's)", v.Label, vf.Nodes, des.MaxNodes)
		case vf.Nodes != 0 && s.Degree >= vf.Nodes:
			return bad("variant %q: nodes %d: the study's degree %d needs more nodes", v.Label, vf.Nodes, s.Degree)
		case v.Replicate < 0 || v.Replicate > maxReplicate:
			return bad("variant %q: replicate %d: want 0 to %d", v.Label, v.Replicate, maxReplicate)
		case v.Label == "":
			return bad("variant %d: no label", i)
		case labels[v.Label]:
			return bad("variant label %q given twice", v.Label)
		case v.Profile == "":
			return bad("variant %q: no profile; want %s", v.Label, strings.Join(cell.ProfileNames(), ", "))
		}
		labels[v.Label] = true
		off, err := partial.ParseRulesOff(vf.BRulesOff)
		if err != nil {
			return bad("variant %q: b_rules_off: %w", v.Label, err)
		}
		v.BRulesOff = off
		if vf.BTimeout != "" {
			if v.BTimeout, err = des.ParseDuration(vf.BTimeout, des.Millisecond, des.MaxVirtual); err != nil {
				return bad("variant %q: b_timeout: %w", v.Label, err)
			}
		}
		v.BFixed = vf.BFixed
		if err := checkSetting(SettingProfile, v.Profile, nil); err != nil {
			return bad("variant %q: %w", v.Label, err)
		}
		if v.Transport != "" {
			if err := checkSetting(SettingTransport, v.Transport, nil); err != nil {
				return bad("variant %q: %w", v.Label, err)
			}
		}
		for _, k := range sortedKeys(v.Knobs) {
			if IsGossipSetting(k) {
				return bad("variant %q: knobs: %s is a gossip knob; give it under \"gossip\"", v.Label, k)
			}
			if err := checkSetting(k, v.Knobs[k], []string{v.Profile}); err != nil {
				return bad("variant %q: knobs: %w", v.Label, err)
			}
		}
		for _, k := range sortedKeys(v.Gossip) {
			if !IsGossipSetting(k) {
				return bad("variant %q: gossip: unknown gossip knob %q; valid: %s", v.Label, k, strings.Join(GossipSettings, ", "))
			}
			if err := checkSetting(k, v.Gossip[k], nil); err != nil {
				return bad("variant %q: gossip: %w", v.Label, err)
			}
		}
		for _, a := range v.Skip {
			if _, err := arms.LookupArm(a); err != nil {
				return bad("variant %q: skip: %w", v.Label, err)
			}
		}
		if v.Payload, err = filePayload(vf.Payload); err != nil {
			return bad("variant %q: payload: %w", v.Label, err)
		}
		s.Variants = append(s.Variants, v)
	}
	for i, cf := range f.Claims {
		c, err := s.readClaim(cf)
		if err != nil {
			return bad("claim %d: %w", i+1, err)
		}
		s.Claims = append(s.Claims, c)
	}
	return s, nil
}

// readClaim checks a claim of a study file against the study's variants
// and arms.
func (s Study) readClaim(cf claimFile) (Claim, error) {
	dir, ok := claimDirections[cf.Direction]
	c := Claim{Text: strings.TrimSpace(cf.Text), Variant: cf.Variant, Against: cf.Against, AgainstArm: cf.AgainstArm,
		Arms: cf.Arms, Stat: cf.Stat, Direction: dir, Margin: cf.Margin, Requires: cf.Requires}
	switch {
	case c.Text == "":
		return c, errors.New("no text")
	case cf.Margin != 0 && dir != 0:
		return c, fmt.Errorf("margin %g: only a claim of no change (direction \"same\") has one", cf.Margin)
	case cf.Requires < 0 || cf.Requires > len(s.Claims):
		return c, fmt.Errorf("requires %d: want the number of an earlier claim (1 to %d)", cf.Requires, len(s.Claims))
	case !ok:
		return c, fmt.Errorf("direction %q: want lower, higher or same", cf.Direction)
	case c.Stat != "" && !slices.Contains(CompareStats, c.Stat):
		return c, fmt.Errorf("stat %q: want %s", c.Stat, strings.Join(CompareStats, ", "))
	case c.AgainstArm != "" && !slices.Contains(s.Arms, c.AgainstArm):
		return c, fmt.Errorf("against_arm %q is not one of the study's arms (%s)", c.AgainstArm, strings.Join(s.Arms, ", "))
	}
	for _, a := range c.Arms {
		if !slices.Contains(s.Arms, a) {
			return c, fmt.Errorf("arm %q is not one of the study's arms (%s)", a, strings.Join(s.Arms, ", "))
		}
	}
	if _, err := s.Judge(c, nil, nil); err != nil {
		return c, err
	}
	return c, nil
}

// filePayload reads a payload size of a study file, such as "1MiB"; ""
// is 0.
func filePayload(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	b, err := des.ParseBytes(v, 1, maxPayload)
	return int(b), err
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validEncoding reports whether s names a wire encoding.
func validEncoding(s string) bool {
	_, err := arms.ParseEncoding(s)
	return err == nil
}
