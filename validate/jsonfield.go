package validate

// Field readers shared by the record loaders: each reads one JSON value and
// says, on failure, what it wanted.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// jsonNumber reads a JSON number.
func jsonNumber(raw json.RawMessage) (float64, error) {
	var n json.Number
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' || json.Unmarshal(t, &n) != nil {
		return 0, fmt.Errorf("want a number, got %s", raw)
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a finite number, got %s", raw)
	}
	return f, nil
}

// jsonInt reads a JSON number that is a whole number ("1e3" is 1000).
func jsonInt(raw json.RawMessage) (int64, error) {
	f, err := jsonNumber(raw)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("want a whole number, got %s", raw)
	}
	return int64(f), nil
}

// jsonCount reads a whole number that is zero or more.
func jsonCount(raw json.RawMessage) (int64, error) {
	n, err := jsonInt(raw)
	if err == nil && n < 0 {
		err = fmt.Errorf("want a count of zero or more, got %s", raw)
	}
	return n, err
}

// jsonString reads a JSON string.
func jsonString(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("want a string, got %s", raw)
	}
	return s, nil
}

// jsonLabel reads a JSON string, or a number kept as its text (a record's
// size labels may be either).
func jsonLabel(raw json.RawMessage) (string, error) {
	if s, err := jsonString(raw); err == nil {
		return s, nil
	}
	if _, err := jsonNumber(raw); err != nil {
		return "", fmt.Errorf("want a string or a number, got %s", raw)
	}
	return string(bytes.TrimSpace(raw)), nil
}

// jsonTime reads a time in seconds, or null for censored, scaling the
// number by scale (1e-3 for a key in milliseconds). A negative time is an
// error.
func jsonTime(raw json.RawMessage, scale float64) (Value, error) {
	if isNull(raw) {
		return CensoredValue(), nil
	}
	f, err := jsonNumber(raw)
	if err != nil {
		return Value{}, fmt.Errorf("want a number or null, got %s", raw)
	}
	if f < 0 {
		return Value{}, fmt.Errorf("want a time of zero or more, got %s", raw)
	}
	return Known(f * scale), nil
}

// jsonBool reads true, false, 1 or 0.
func jsonBool(raw json.RawMessage) (bool, error) {
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, nil
	}
	if n, err := jsonInt(raw); err == nil && (n == 0 || n == 1) {
		return n == 1, nil
	}
	return false, fmt.Errorf("want true, false, 1 or 0, got %s", raw)
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int {
	return 1 + bytes.Count(data[:min(off, len(data))], []byte("\n"))
}

// skipSpace returns the offset of the first byte at or after off that is
// not JSON white space (nor a ',' when comma is set).
func skipSpace(data []byte, off int, comma bool) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n':
		case ',':
			if !comma {
				return off
			}
		default:
			return off
		}
		off++
	}
	return off
}
