package netmodel

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadDraw: ReadDraw never panics; its errors are one line; a draw it
// accepts validates, and writes and reads back to the same draw and the
// same text.
func FuzzReadDraw(f *testing.F) {
	valid := func(n, degree int, model, scen string) string {
		d, err := NewDraw(n, degree, 3, model, scen)
		require.NoError(f, err)
		var buf bytes.Buffer
		require.NoError(f, d.WriteJSON(&buf))
		return buf.String()
	}
	geo := valid(4, 2, "geo", "home")
	fixed := valid(6, 3, "fixed:20ms", "up7")
	uniform := valid(5, 2, "uniform:1ms,3ms", "dcb20")
	for _, s := range []string{
		geo, fixed, uniform,
		strings.Replace(geo, `"n": 4`, `"n": 100001`, 1),
		strings.Replace(geo, `"n": 4`, `"n": 4611686018427387904`, 1),
		strings.Replace(geo, `"degree": 2`, `"degree": 4611686018427387904`, 1),
		strings.Replace(geo, `"model": "geo"`, `"model": "fixed:9999h"`, 1),
		strings.Replace(geo, `"scenario": "home"`, `"scenario": "up99999999"`, 1),
		strings.Replace(geo, `"latency_ns": [`, `"latency_ns": [[9223372036854775807,0,0,0],`, 1),
		strings.Replace(fixed, "20000000", "9223372036854775807", 1),
		strings.Replace(fixed, "20000000", "-1", 1),
		strings.Replace(fixed, "7000000", "0", 1),
		strings.Replace(uniform, `"regions"`, `"region"`, 1),
		geo[:len(geo)/2],
		`{"n":2,"seed":0,"model":"geo","scenario":"home","degree":1,"edges":[[0,1]],"up_bps":[1000000,1000000],"down_bps":[1000000,1000000],"latency_ns":[[0,1],[1,0]]}`,
		`{"n":100000,"seed":0,"latency_ns":[[],[]]}`,
		`null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ReadDraw(bytes.NewReader(in))
		if err != nil {
			require.Nil(t, d)
			require.NotContains(t, err.Error(), "\n", "errors are one line")
			return
		}
		require.NoError(t, d.Validate())
		var first bytes.Buffer
		require.NoError(t, d.WriteJSON(&first))
		back, err := ReadDraw(bytes.NewReader(first.Bytes()))
		require.NoError(t, err)
		scenTestDrawsEqual(t, d, back)
		var second bytes.Buffer
		require.NoError(t, back.WriteJSON(&second))
		require.Equal(t, first.String(), second.String())
	})
}
